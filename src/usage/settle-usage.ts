import type { AnswerUsage } from '../api/inference-api.js';
import type { RateLimitSpec } from '../config/resource-types.js';
import type { RequestContext } from '../http/request-context.js';
import type { TokenLimiter } from '../ratelimit/limiter.js';
import type { LimiterTerm } from '../ratelimit/admit-all.js';
import { settleCounters } from '../ratelimit/settle.js';
import type { TokenCounter } from '../tokens/token-counter.js';

/**
 * After the answer ended: the backend's usage is the truth. Corrects the input count (and the
 * route's input counter) to usage.prompt_tokens, and charges the output tokens — counted from
 * the generated text when the backend reported no usage, on every limit of the request.
 * Synchronous on the common path (usage reported, counters settled from a local lease or not
 * limited); a Promise only when a count or a limit store has to be waited for. A limit store's
 * failure is swallowed (the limiter logs and counts it); a failed count of the text is not.
 */
export function settleUsage(
  ctx: RequestContext, tokens: TokenCounter, usage: AnswerUsage | null,
  /** The limits of the request (route, tenant): each gets the correction and the output. null: none. */
  terms: readonly LimiterTerm[] | null,
): Promise<void> | void {
  let output = 0;
  if (usage !== null) {
    if (usage.completionTokens !== null) {
      output = usage.completionTokens;
    } else {
      const c = usage.generated !== null ? usage.generated.tokens() : usage.text.length > 0 ? tokens.countText(usage.text) : 0;
      if (c instanceof Promise) return c.then((n) => settleCounted(ctx, usage, n, terms));
      output = c;
    }
  }
  return settleCounted(ctx, usage, output, terms);
}

function settleCounted(ctx: RequestContext, usage: AnswerUsage | null, output: number, terms: readonly LimiterTerm[] | null): Promise<void> | void {
  let inputDelta = 0;
  if (usage !== null && usage.promptTokens !== null && usage.promptTokens !== ctx.inputTokens) {
    inputDelta = usage.promptTokens - ctx.inputTokens;
    ctx.inputTokens = usage.promptTokens;
  }
  ctx.outputTokens = output;
  if (terms === null) return;
  return settleFrom(terms, 0, inputDelta, output);
}

/** Settles terms[from..] in order; synchronous while each limiter is (local leases). */
function settleFrom(terms: readonly LimiterTerm[], from: number, inputDelta: number, output: number): Promise<void> | void {
  for (let i = from; i < terms.length; i++) {
    const t = terms[i];
    const p = quietly(t.limiter, t.key, t.limit, inputDelta, output);
    if (p === undefined) continue;
    if (i + 1 === terms.length) return p; // the last one: nothing to chain after it
    return p.then(() => settleFrom(terms, i + 1, inputDelta, output));
  }
}

/**
 * settleCounters without failures: a limit store that fails after the answer was sent is
 * logged and counted by the limiter itself.
 */
function quietly(l: TokenLimiter, key: string, limit: RateLimitSpec, inputDelta: number, output: number): Promise<void> | void {
  let p: Promise<void> | void;
  try {
    p = settleCounters(l, key, limit, inputDelta, output);
  } catch {
    return;
  }
  if (p instanceof Promise) return p.catch(ignore);
}

function ignore(): void {}
