import type { Exchange } from '../http/exchange.js';
import type { TokenLimiter } from '../ratelimit/limiter.js';
import { settleCounters } from '../ratelimit/settle.js';
import type { CompiledRoute } from '../route/route-table.js';
import type { TokenCounter } from '../tokens/token-counter.js';
import type { UsageSeen } from '../upstream/upstream-call.js';

/**
 * After the answer ended: the backend's usage is the truth. Corrects the input count (and the
 * route's input counter) to usage.prompt_tokens, and charges the output tokens — counted from
 * the generated text when the backend reported no usage.
 */
export async function settleUsage(
  x: Exchange, tokens: TokenCounter, route: CompiledRoute, limiter: TokenLimiter | null, usage: UsageSeen | null,
): Promise<void> {
  const ctx = x.ctx;
  let output = 0;
  let inputDelta = 0;
  if (usage !== null) {
    if (usage.completionTokens !== null) {
      output = usage.completionTokens;
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
  const limit = route.rateLimit;
  if (limiter === null || limit === null) return;
  try {
    await settleCounters(limiter, route.limitKey, limit, inputDelta, output);
  } catch {
    // The limit store failed after the answer was sent; the limiter itself logs and counts that.
  }
}
