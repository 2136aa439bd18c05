import { tokenCount, type AnswerUsage } from '../api/inference-api.js';
import type { RateLimitSpec } from '../config/resource-types.js';
import type { RequestContext } from '../http/request-context.js';
import type { TokenLimiter } from '../ratelimit/limiter.js';
import { owedInWindow, type LimiterTerm } from '../ratelimit/admit-all.js';
import { settleCounters } from '../ratelimit/settle.js';
import type { TokenCounter } from '../tokens/token-counter.js';

/**
 * After the answer ended: the backend's usage is the truth. Corrects the input count (and the
 * route's input counter) to usage.prompt_tokens, and charges the output tokens — counted from
 * the generated text when the backend reported no usage, on every limit of the request.
 * Synchronous unless the text has to be counted off the event loop: a Promise only for that
 * count, whose failure is the caller's. The limits' settles are not waited for: nothing of the
 * request depends on them (a Redis settle may wait up to SETTLE_WAIT_MS for a call to ride along
 * with, and the request's record and its memory need not wait with it); a limit store's failure is
 * swallowed (the limiter logs and counts it), and a limiter that closes sends the settles it holds.
 */
export function settleUsage(
  ctx: RequestContext, tokens: TokenCounter, usage: AnswerUsage | null,
  /** The limits of the request (route, tenant): each gets the correction and the output. null: none. */
  terms: readonly LimiterTerm[] | null,
): Promise<void> | void {
  let output = 0;
  const completion = usage === null ? null : tokenCount(usage.completionTokens);
  if (usage !== null) {
    if (completion !== null) {
      output = completion;
    } else {
      const c = usage.generated !== null ? usage.generated.tokens() : usage.text.length > 0 ? tokens.countText(usage.text) : 0;
      if (c instanceof Promise) return c.then((n) => settleCounted(ctx, usage, n, false, terms));
      output = c;
    }
  }
  return settleCounted(ctx, usage, output, completion !== null, terms);
}

function settleCounted(ctx: RequestContext, usage: AnswerUsage | null, output: number, reported: boolean, terms: readonly LimiterTerm[] | null): void {
  let inputDelta = 0;
  const prompt = usage === null ? null : tokenCount(usage.promptTokens);
  if (prompt !== null && prompt !== ctx.inputTokens) {
    inputDelta = prompt - ctx.inputTokens;
    ctx.inputTokens = prompt;
  }
  ctx.outputTokens = output;
  if (usage !== null && !reported && usage.generated !== null) ctx.outputTokensEstimated = usage.generated.estimatedTokens;
  if (terms !== null) settleAll(terms, inputDelta, output, ctx.admittedAt, ctx.admittedByFailureMode, ctx.admittedWindows);
  // An admission the `open` failure mode took, which Redis may have charged late: corrected there too.
  if (inputDelta !== 0 && ctx.admittedLateCharges !== null) for (const c of ctx.admittedLateCharges) c.correct(inputDelta);
}

/**
 * Settles every term, each on its own: their limiters are independent, and nothing waits for them.
 * The input correction goes only to a limit whose window that admitted the request is still on
 * (admit-all.ts owedInWindow: a store with a clock of its own is given the window it charged, and
 * decides by that clock): an answer that ends in a later window corrects nothing there (that window
 * owes the request nothing); its output is charged to the window it ends in. Bit i of
 * `byFailureMode`: term i was admitted by its failure mode, so its correction goes where that
 * charged it (failure-mode.ts).
 */
function settleAll(terms: readonly LimiterTerm[], inputDelta: number, output: number, admittedAt: number, byFailureMode: number, windows: readonly number[] | null): void {
  const now = inputDelta !== 0 ? Date.now() : 0;
  for (let i = 0; i < terms.length; i++) {
    const t = terms[i];
    const delta = inputDelta !== 0 && owedInWindow(terms, i, admittedAt, now, windows) ? inputDelta : 0;
    quietly(t.limiter, t.key, t.limit, delta, output, ((byFailureMode >> i) & 1) === 1, admittedAt, windows !== null ? windows[i] : -1);
  }
}

/**
 * settleCounters without failures: a limit store that fails after the answer was sent is
 * logged and counted by the limiter itself.
 */
function quietly(l: TokenLimiter, key: string, limit: RateLimitSpec, inputDelta: number, output: number, byFailureMode: boolean, admittedAt: number, window: number): void {
  let p: Promise<void> | void;
  try {
    p = settleCounters(l, key, limit, inputDelta, output, byFailureMode, admittedAt, window);
  } catch {
    return;
  }
  if (p instanceof Promise) p.catch(ignore);
}

function ignore(): void {}
