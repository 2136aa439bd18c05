import { deepFreeze } from './config/deep-freeze.js';
import { bareMillisecondsWarning } from './config/duration-setting.js';
import { parseSettings, type RouterSettings } from './config/settings.js';
import { parseAccessLogSettings, type AccessLogSettings } from './observe/access-log-settings.js';
import { parseSchedulerSettings, type SchedulerSettings } from './pick/scheduler-settings.js';
import { parseFairnessSettings, type FairnessSettings } from './pick/fairness-settings.js';
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
  /** ROUTER_FAIRNESS_* (docs/scheduling.md#fair-queueing); null = off. */
  readonly fairness: FairnessSettings | null;
  /** OTEL_* (docs/tracing.md); null = tracing off. */
  readonly tracing: TraceSettings | null;
  /** Values accepted but likely mistaken, each a `warn` line the primary logs at start. */
  readonly warnings: readonly SettingWarning[];
}

export interface SettingWarning {
  readonly variable: string;
  readonly message: string;
}

/**
 * Every variable read with durationSetting (a test keeps the list complete). One given as a bare
 * number from 1 to 999 is warned about at start when the same number in seconds is accepted too
 * (bareMillisecondsWarning).
 */
export const DURATION_VARIABLES: readonly string[] = [
  'ROUTER_DRAIN_DELAY', 'ROUTER_DRAIN_TIMEOUT', 'ROUTER_WORKER_WATCHDOG', 'ROUTER_UPSTREAM_TIMEOUT', 'ROUTER_UPSTREAM_IDLE_TIMEOUT',
  'ROUTER_UPSTREAM_CONNECT_TIMEOUT', 'ROUTER_UPSTREAM_IDLE_RACE', 'ROUTER_POD_METRICS_INTERVAL', 'ROUTER_OUTLIER_BASE_EJECTION', 'ROUTER_OUTLIER_MAX_EJECTION',
  'ACCESS_LOG_FLUSH_INTERVAL', 'RATE_LIMIT_REDIS_TIMEOUT', 'RATE_LIMIT_REDIS_RECALL_WAIT',
  'ROUTER_FAIRNESS_QUEUE_TIMEOUT', 'ROUTER_FAIRNESS_WINDOW',
];

/**
 * Returns null when --help was asked for. Throws UsageError on a bad flag or router setting, an
 * Error naming the variable on a bad part setting (checked in this order).
 */
export function parseAllSettings(argv: readonly string[], env: NodeJS.ProcessEnv): Settings | null {
  const parts = parseParts(argv, env);
  if (parts === null) return null;
  const warnings = DURATION_VARIABLES.flatMap((variable) => {
    const message = bareMillisecondsWarning(variable, env[variable]);
    // Only where seconds are a possible meaning: the settings read again with the number in seconds.
    return message === null || !accepted(() => parseParts(argv, { ...env, [variable]: `${env[variable]!.trim()}s` })) ? [] : [{ variable, message }];
  });
  const fairShare = fairShareWarning(parts.fairness, parts.workers);
  if (fairShare !== null) warnings.push(fairShare);
  return deepFreeze({ ...parts, warnings });
}

function parseParts(argv: readonly string[], env: NodeJS.ProcessEnv): Omit<Settings, 'warnings'> | null {
  const router = parseSettings(argv, env);
  if (router === null) return null;
  return {
    ...router,
    accessLog: parseAccessLogSettings(env),
    tokenizer: parseTokenizerSettings(env),
    redisLimits: parseRedisLimitSettings(env),
    scheduler: parseSchedulerSettings(env),
    fairness: parseFairnessSettings(env),
    tracing: parseTraceSettings(env),
  };
}

/**
 * Fair queueing gives each worker ceil(N / workers) places: when N is not a multiple of the
 * workers, the instance lets more than N through at once, which the operator is told at start.
 */
function fairShareWarning(fairness: FairnessSettings | null, workers: number): SettingWarning | null {
  if (fairness === null || fairness.maxConcurrent % workers === 0) return null;
  const each = Math.ceil(fairness.maxConcurrent / workers);
  return {
    variable: 'ROUTER_FAIRNESS_MAX_CONCURRENT',
    message: `ROUTER_FAIRNESS_MAX_CONCURRENT=${fairness.maxConcurrent} is not a multiple of the ${workers} workers: each worker lets ${each} requests through to a ModelServer at once, ${each * workers} for the instance (docs/scheduling.md#fair-queueing)`,
  };
}

function accepted(parse: () => unknown): boolean {
  try {
    parse();
    return true;
  } catch {
    return false;
  }
}
