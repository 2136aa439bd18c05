import { parseAccessLogSettings } from '../observe/access-log-settings.js';
import { parseRedisLimitSettings } from '../ratelimit/redis/settings.js';
import { parseTokenizerSettings } from '../tokens/tokenizer-settings.js';
import { loadUws } from '../http/uws.js';

/**
 * Validates every environment setting once, in the primary, before any worker starts, so a bad
 * value stops the router with a message naming the variable (exit 2) instead of a crash loop.
 */
export function validateEnvironment(env: NodeJS.ProcessEnv): void {
  parseAccessLogSettings(env);
  parseTokenizerSettings(env);
  parseRedisLimitSettings(env);
  loadUws(env.ROUTER_ALLOW_UWS_FALLBACK === 'true');
}
