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
 */
export async function settleUsage(
  ctx: RequestContext, tokens: TokenCounter, usage: AnswerUsage | null,
  limiter: TokenLimiter | null, key: string, limit: RateLimitSpec | null,
  /** Several limits (route and tenant): each gets the correction and the output. */
  terms: readonly LimiterTerm[] | null = null,
): Promise<void> {
  let output = 0;
  let inputDelta = 0;
  if (usage !== null) {
    if (usage.completionTokens !== null) {
      output = usage.completionTokens;
    } else if (usage.generated !== null) {
      const c = usage.generated.tokens();
      output = typeof c === 'number' ? c : await c;
    } else if (usage.text.length > 0) {
      const c = tokens.countText(usage.text);
      output = typeof c === 'number' ? c : await c;
    }
    if (usage.promptTokens !== null && usage.promptTokens !== ctx.inputTokens) {
      inputDelta = usage.promptTokens - ctx.inputTokens;
      ctx.inputTokens = usage.promptTokens;
    }
  }
  ctx.outputTokens = output;
  if (terms !== null) {
    for (const t of terms) {
      try { await settleCounters(t.limiter, t.key, t.limit, inputDelta, output); } catch { /* as below */ }
    }
    return;
  }
  if (limiter === null || limit === null) return;
  try {
    await settleCounters(limiter, key, limit, inputDelta, output);
  } catch {
    // The limit store failed after the answer was sent; the limiter itself logs and counts that.
  }
}
