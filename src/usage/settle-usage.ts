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
 * the generated text when the backend reported no usage. `limiter` null: the route is not limited.
 * Synchronous on the common path (usage reported, counters settled from a local lease or not
 * limited); a Promise only when a count or a limit store has to be waited for. A limit store's
 * failure is swallowed (the limiter logs and counts it); a failed count of the text is not.
 */
export function settleUsage(
  ctx: RequestContext, tokens: TokenCounter, usage: AnswerUsage | null,
  limiter: TokenLimiter | null, key: string, limit: RateLimitSpec | null,
  /** Several limits (route and tenant): each gets the correction and the output. */
  terms: readonly LimiterTerm[] | null = null,
): Promise<void> | void {
  let output = 0;
  if (usage !== null) {
    if (usage.completionTokens !== null) {
      output = usage.completionTokens;
    } else {
      const c = usage.generated !== null ? usage.generated.tokens() : usage.text.length > 0 ? tokens.countText(usage.text) : 0;
      if (c instanceof Promise) return c.then((n) => settleCounted(ctx, usage, n, limiter, key, limit, terms));
      output = c;
    }
  }
  return settleCounted(ctx, usage, output, limiter, key, limit, terms);
}

function settleCounted(
  ctx: RequestContext, usage: AnswerUsage | null, output: number,
  limiter: TokenLimiter | null, key: string, limit: RateLimitSpec | null, terms: readonly LimiterTerm[] | null,
): Promise<void> | void {
  let inputDelta = 0;
  if (usage !== null && usage.promptTokens !== null && usage.promptTokens !== ctx.inputTokens) {
    inputDelta = usage.promptTokens - ctx.inputTokens;
    ctx.inputTokens = usage.promptTokens;
  }
  ctx.outputTokens = output;
  if (terms !== null) return settleTerms(terms, inputDelta, output);
  if (limiter === null || limit === null) return;
  return quietly(limiter, key, limit, inputDelta, output);
}

async function settleTerms(terms: readonly LimiterTerm[], inputDelta: number, output: number): Promise<void> {
  for (const t of terms) {
    const p = quietly(t.limiter, t.key, t.limit, inputDelta, output);
    if (p !== undefined) await p;
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
