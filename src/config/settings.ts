import { availableParallelism } from 'node:os';
import { parseDuration } from './duration.js';

/**
 * The router's own settings from flags and environment (flags win). Validated once, then frozen.
 * The settings of the parts (access log, tokenizer, Redis limits) are added by src/settings.ts.
 */
export interface RouterSettings {
  readonly source: 'file' | 'kubernetes';
  /** Resources file (file source). */
  readonly resources: string | null;
  readonly port: number;
  readonly host: string;
  readonly workers: number;
  readonly apiGroup: string;
  /** Kubernetes namespace to watch; null = all. */
  readonly namespace: string | null;
  readonly drainTimeoutMs: number;
  readonly upstreamTimeoutMs: number;
  readonly maxBodyBytes: number;
  /** Largest resources file read (file source); a larger one is refused. */
  readonly resourcesMaxBytes: number;
  /** Run on uWS's JavaScript fallback instead of refusing to start. */
  readonly allowUwsFallback: boolean;
  /** Local limits: workers decide from leased slices of the budget (false: the primary decides every request). */
  readonly localLeases: boolean;
  /** ROUTER_AUTH_CONFIG: the auth file (API keys, JWT), or null for no authentication. */
  readonly authConfig: string | null;
}

export class UsageError extends Error {}

export const USAGE = `Usage: inference-router --resources FILE [options]
       inference-router --kubernetes [options]

Options (environment equivalents in brackets; flags win):
  --resources FILE   YAML file of ModelRoute/ModelServer resources, watched   [ROUTER_RESOURCES]
  --kubernetes       watch ModelRoute/ModelServer/Pods in the cluster         [ROUTER_SOURCE=kubernetes]
  --port N           listen port (default 8080)                               [ROUTER_PORT]
  --host ADDR        listen address (default 0.0.0.0)                         [ROUTER_HOST]
  --workers N        worker processes (default: available parallelism)       [ROUTER_WORKERS]
  --help             print this help

More environment: ROUTER_API_GROUP, ROUTER_NAMESPACE, ROUTER_DRAIN_TIMEOUT (30s),
ROUTER_UPSTREAM_TIMEOUT (300s), ROUTER_MAX_BODY_BYTES (16777216),
ROUTER_RESOURCES_MAX_BYTES (4194304), ACCESS_LOG_ENABLED,
ACCESS_LOG_FORMAT, ACCESS_LOG_OUTPUT, ACCESS_LOG_FLUSH_INTERVAL (100ms), ROUTER_TOKEN_ESTIMATOR, RATE_LIMIT_LOCAL_LEASES,
RATE_LIMIT_REDIS_FAILURE_MODE, RATE_LIMIT_REDIS_TIMEOUT, OTEL_* (tracing). See docs/configuration.md.`;

const FLAGS_WITH_VALUE = new Set(['--resources', '--port', '--host', '--workers']);

function parseIntIn(name: string, raw: string, min: number, max: number): number {
  if (!/^\d+$/.test(raw.trim())) throw new UsageError(`${name}: expected an integer from ${min} to ${max}, got "${raw}"`);
  const n = Number(raw.trim());
  if (n < min || n > max) throw new UsageError(`${name}: expected an integer from ${min} to ${max}, got ${n}`);
  return n;
}

function booleanSetting(name: string, raw: string | undefined, fallback: boolean): boolean {
  if (raw === undefined || raw === '') return fallback;
  if (raw !== 'true' && raw !== 'false') throw new UsageError(`${name}: expected "true" or "false", got "${raw}"`);
  return raw === 'true';
}

function durationSetting(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw === '') return fallback;
  try {
    const ms = parseDuration(raw);
    if (ms <= 0) throw new Error('must be greater than 0');
    return ms;
  } catch (err) {
    throw new UsageError(`${name}: expected a duration such as 500ms, 30s or 2m, got "${raw}" (${(err as Error).message})`);
  }
}

/** Returns null when --help was asked for. Throws UsageError on a bad flag or value. */
export function parseSettings(argv: readonly string[], env: NodeJS.ProcessEnv): RouterSettings | null {
  const flags = new Map<string, string>();
  let kubernetes = false;
  for (let i = 0; i < argv.length; i++) {
    let arg = argv[i];
    if (arg === '--help' || arg === '-h') return null;
    if (arg === '--kubernetes') { kubernetes = true; continue; }
    let value: string | undefined;
    const eq = arg.indexOf('=');
    if (arg.startsWith('--') && eq > 0) { value = arg.slice(eq + 1); arg = arg.slice(0, eq); }
    if (!FLAGS_WITH_VALUE.has(arg)) throw new UsageError(`unknown option "${argv[i]}"`);
    if (value === undefined) {
      value = argv[++i];
      if (value === undefined) throw new UsageError(`${arg} needs a value`);
    }
    flags.set(arg, value);
  }

  const pick = (flag: string, envName: string): string | undefined => {
    const v = flags.get(flag) ?? env[envName];
    return v === undefined || v === '' ? undefined : v;
  };

  const sourceEnv = env.ROUTER_SOURCE;
  if (sourceEnv !== undefined && sourceEnv !== '' && sourceEnv !== 'file' && sourceEnv !== 'kubernetes') {
    throw new UsageError(`ROUTER_SOURCE: expected "file" or "kubernetes", got "${sourceEnv}"`);
  }
  const source = kubernetes || sourceEnv === 'kubernetes' ? 'kubernetes' : 'file';
  const resources = pick('--resources', 'ROUTER_RESOURCES') ?? null;
  if (source === 'file' && resources === null) {
    throw new UsageError('no resources: give --resources FILE (or ROUTER_RESOURCES), or --kubernetes');
  }
  if (source === 'kubernetes' && flags.has('--resources')) {
    throw new UsageError('--resources and --kubernetes exclude each other');
  }

  const portRaw = pick('--port', 'ROUTER_PORT');
  const workersRaw = pick('--workers', 'ROUTER_WORKERS');
  const bodyRaw = env.ROUTER_MAX_BODY_BYTES;
  const resourcesMaxRaw = env.ROUTER_RESOURCES_MAX_BYTES;
  const apiGroup = env.ROUTER_API_GROUP || 'networking.serving.volcano.sh';
  if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(apiGroup)) {
    throw new UsageError(`ROUTER_API_GROUP: expected a DNS name such as networking.serving.volcano.sh, got "${apiGroup}"`);
  }

  return Object.freeze({
    source,
    resources: source === 'file' ? resources : null,
    port: portRaw === undefined ? 8080 : parseIntIn(flags.has('--port') ? '--port' : 'ROUTER_PORT', portRaw, 0, 65535),
    host: pick('--host', 'ROUTER_HOST') ?? '0.0.0.0',
    workers: workersRaw === undefined
      ? availableParallelism()
      : parseIntIn(flags.has('--workers') ? '--workers' : 'ROUTER_WORKERS', workersRaw, 1, 256),
    apiGroup,
    namespace: env.ROUTER_NAMESPACE || null,
    drainTimeoutMs: durationSetting('ROUTER_DRAIN_TIMEOUT', env.ROUTER_DRAIN_TIMEOUT, 30_000),
    upstreamTimeoutMs: durationSetting('ROUTER_UPSTREAM_TIMEOUT', env.ROUTER_UPSTREAM_TIMEOUT, 300_000),
    maxBodyBytes: bodyRaw === undefined || bodyRaw === ''
      ? 16 * 1024 * 1024
      : parseIntIn('ROUTER_MAX_BODY_BYTES', bodyRaw, 1, 1024 * 1024 * 1024),
    resourcesMaxBytes: resourcesMaxRaw === undefined || resourcesMaxRaw === ''
      ? 4 * 1024 * 1024
      : parseIntIn('ROUTER_RESOURCES_MAX_BYTES', resourcesMaxRaw, 1, 1024 * 1024 * 1024),
    allowUwsFallback: booleanSetting('ROUTER_ALLOW_UWS_FALLBACK', env.ROUTER_ALLOW_UWS_FALLBACK, false),
    localLeases: booleanSetting('RATE_LIMIT_LOCAL_LEASES', env.RATE_LIMIT_LOCAL_LEASES, true),
    authConfig: env.ROUTER_AUTH_CONFIG || null,
  });
}
