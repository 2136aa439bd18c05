import { deepFreeze } from './config/deep-freeze.js';
import { parseSettings, type RouterSettings } from './config/settings.js';
import { parseAccessLogSettings, type AccessLogSettings } from './observe/access-log-settings.js';
import { parseSchedulerSettings, type SchedulerSettings } from './pick/scheduler-settings.js';
import { parseTraceSettings, type TraceSettings } from './observe/trace-settings.js';
import { parseRedisLimitSettings, type RedisLimitSettings } from './ratelimit/redis/settings.js';
import { parseTokenizerSettings, type TokenizerSettings } from './tokens/tokenizer-settings.js';

/**
 * Every setting of the router, parsed and validated once from the command line and the
 * environment, then deep-frozen and handed to the primary and the workers. Nothing else in
 * src/ reads process.env. The router's own settings (flags, ROUTER_*) come from
 * config/settings.ts; each part's settings from the pure parser next to the code that uses them.
 */
export interface Settings extends RouterSettings {
  /** ACCESS_LOG_* (docs/access-log.md). */
  readonly accessLog: AccessLogSettings;
  /** ROUTER_TOKEN_ESTIMATOR, ROUTER_TOKENIZER_* (docs/tokens.md). */
  readonly tokenizer: TokenizerSettings;
  /** RATE_LIMIT_REDIS_*, REDIS_* (docs/rate-limiting.md). */
  readonly redisLimits: RedisLimitSettings;
  /** ROUTER_OUTLIER_*, ROUTER_POD_METRICS_INTERVAL, ROUTER_SCHEDULER_CONFIG (docs/scheduling.md). */
  readonly scheduler: SchedulerSettings;
  /** OTEL_* (docs/tracing.md); null = tracing off. */
  readonly tracing: TraceSettings | null;
}

/**
 * Returns null when --help was asked for. Throws UsageError on a bad flag or router setting, an
 * Error naming the variable on a bad part setting (checked in this order).
 */
export function parseAllSettings(argv: readonly string[], env: NodeJS.ProcessEnv): Settings | null {
  const router = parseSettings(argv, env);
  if (router === null) return null;
  return deepFreeze({
    ...router,
    accessLog: parseAccessLogSettings(env),
    tokenizer: parseTokenizerSettings(env),
    redisLimits: parseRedisLimitSettings(env),
    scheduler: parseSchedulerSettings(env),
    tracing: parseTraceSettings(env),
  });
}
