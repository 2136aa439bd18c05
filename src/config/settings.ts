import { isIP, isIPv6 } from 'node:net';
import { availableParallelism } from 'node:os';
import { durationSetting, type DurationRange } from './duration-setting.js';
import { nearName } from './near-name.js';
import { badSetting } from '../setting-message.js';
import { listenerTls, type ListenerTlsSetting } from './listener-tls.js';

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
  /** ROUTER_TLS_CERT_FILE / ROUTER_TLS_KEY_FILE: the listener serves HTTPS with them; null: plain HTTP. */
  readonly tls: ListenerTlsSetting | null;
  readonly workers: number;
  readonly apiGroup: string;
  /** Kubernetes namespace to watch; null = all. */
  readonly namespace: string | null;
  /** ROUTER_GATEWAY: the Gateway (`<namespace>/<name>`) whose ModelRoutes are served (gateway-binding.ts); null = every route. */
  readonly gateway: string | null;
  readonly drainTimeoutMs: number;
  /** ROUTER_WORKER_WATCHDOG: a serving worker silent this long is killed and restarted, ms; 0 = never. */
  readonly workerWatchdogMs: number;
  readonly upstreamTimeoutMs: number;
  readonly maxBodyBytes: number;
  /** ROUTER_MAX_HEADER_BYTES: largest request head (request line and headers) the 20.57 uWS build reads; beyond it answers 431. */
  readonly maxHeaderBytes: number;
  /** Whether ROUTER_MAX_HEADER_BYTES was given (the 20.30 build cannot apply it: a start-up warning). */
  readonly maxHeaderBytesSet: boolean;
  /** Largest resources file read (file source); a larger one is refused. */
  readonly resourcesMaxBytes: number;
  /** Local limits: workers decide from leased slices of the budget (false: the primary decides every request). */
  readonly localLeases: boolean;
  /** ROUTER_AUTH_CONFIG: the auth file (API keys, JWT), or null for no authentication. */
  readonly authConfig: string | null;
  /** ROUTER_DRAIN_DELAY: how long /readyz answers 503 before the listener closes on SIGTERM. */
  readonly drainDelayMs: number;
  /** ROUTER_LOG_FORMAT: the operational log's format (default: ACCESS_LOG_FORMAT's choice). */
  readonly logFormat: 'json' | 'text';
  /** ROUTER_WORKER_SEMI_SPACE_MB: each worker's V8 semi-space size in MB (0: V8's own sizing). */
  readonly workerSemiSpaceMb: number;
  /** ROUTER_UPSTREAM_CONNECTIONS: most connections one worker keeps open to one pod; requests beyond wait for one. */
  readonly upstreamConnections: number;
  /** ROUTER_UPSTREAM_IDLE_TIMEOUT: how long a connection to a pod stays open unused, ms. */
  readonly upstreamIdleTimeoutMs: number;
  /** ROUTER_UPSTREAM_CONNECT_TIMEOUT: how long a new connection to a pod may take to open, ms. */
  readonly upstreamConnectTimeoutMs: number;
  /** ROUTER_UPSTREAM_IDLE_RACE: how soon after the send a reused connection's break is the idle-close race (resent once), ms. */
  readonly upstreamIdleRaceMs: number;
}

export class UsageError extends Error {}

/**
 * Largest request head the HTTP server reads, bytes. The 20.57 uWS build's own default is 4 KiB,
 * less than one large JWT with a few other headers; 64 KiB is Envoy's order (60 KiB). The 20.30
 * build has fixed limits instead: 4 KiB for a head that arrives in more than one read, about 74 KB
 * for one that arrives in one. A client's head is held per connection until it is whole, so this
 * bounds what a slow client can make a worker hold.
 */
export const DEFAULT_MAX_HEADER_BYTES = 64 * 1024;

/** Each worker's V8 semi-space, MB (docs/configuration.md; the measurements: docs/internals/performance-changes.md). */
export const DEFAULT_WORKER_SEMI_SPACE_MB = 16;

/**
 * Connections one worker opens to one pod at most. A streamed answer holds its connection for the
 * whole generation, and a model server decodes hundreds of sequences at once (vLLM's max_num_seqs
 * is 256 by default), so the cap sits above what a pod serves: requests beyond it wait in the
 * router, unseen by the pod's own queue metrics (docs/configuration.md).
 */
export const DEFAULT_UPSTREAM_CONNECTIONS = 1024;

/**
 * How long a worker keeps an unused connection to a pod, ms. Below the keep-alive timeout of the
 * usual model servers (uvicorn's default, which vLLM's server also uses, is 5 s), so the router
 * closes an idle connection before the pod does and never sends a request on one the pod is
 * closing. A pod that keeps connections longer can be given a longer one (docs/configuration.md,
 * "Connections to a pod").
 */
export const DEFAULT_UPSTREAM_IDLE_TIMEOUT_MS = 4_000;

/**
 * How long a new connection to a pod may take to open, ms; then the attempt counts as a connect
 * failure and the request moves to another pod. A pod on the same network answers a connect in
 * well under a millisecond or refuses it; one that does neither (its node gone, its address
 * dropped by a firewall) holds each request this long before its retry. Envoy's default (5 s).
 */
export const DEFAULT_UPSTREAM_CONNECT_TIMEOUT_MS = 5_000;

/**
 * How soon after a request went out on a reused connection a break of that connection, before
 * any byte of the answer, is taken for the idle-close race (the pod closed the connection as idle
 * just as the request went out) and the request is sent once more on a new connection, ms. The
 * pod's close comes back within a round trip and the time the event loop takes to see it; a
 * later break is the pod's (it had the request and may have run it), answered 502, never resent.
 * Wider covers a worker whose event loop lags (a busy machine); narrower risks no double runs.
 */
export const DEFAULT_UPSTREAM_IDLE_RACE_MS = 20;

export { USAGE } from './usage.js';

const FLAGS_WITH_VALUE = new Set(['--resources', '--port', '--host', '--workers']);

/** What is wrong with an argument that is no option, and the likely fix. */
function unknownOption(arg: string): string {
  // `inference-router resources.yaml`: the file is an option's value, not a positional argument.
  if (!arg.startsWith('-')) return `unexpected argument "${arg}": the router takes options only; give a resources file as --resources ${arg}`;
  const name = arg.split('=', 1)[0];
  const known = [...FLAGS_WITH_VALUE, '--kubernetes', '--help', '--version'];
  // A misspelling (--prot, --hots, --worker), else a shortening or a lengthening (--kube, --resourcesfile).
  // -v: many tools' version flag (this one's is -V), else verbose (which this one has not).
  if (name === '-v') return 'unknown option "-v"; did you mean -V (--version)?';
  const near = nearName(name, known) ?? known.find((f) => f !== name && (f.startsWith(name) || name.startsWith(f)) && name.length >= 4);
  return near === undefined ? `unknown option "${arg}"` : `unknown option "${arg}"; did you mean ${near}?`;
}

function parseIntIn(name: string, raw: string, min: number, max: number): number {
  const n = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : Number.NaN;
  if (!(n >= min && n <= max)) throw new UsageError(badSetting(name, `an integer from ${min} to ${max}`, raw));
  return n;
}

function booleanSetting(name: string, raw: string | undefined, fallback: boolean): boolean {
  if (raw === undefined || raw === '') return fallback;
  if (raw !== 'true' && raw !== 'false') throw new UsageError(badSetting(name, 'true or false', raw));
  return raw === 'true';
}

/**
 * ROUTER_ALLOW_UWS_FALLBACK=true once ran uWebSockets.js's JavaScript fallback when no native build
 * fit the runtime. That server cannot carry the router's answers (it reads a status line given as
 * bytes as its first number, and has no onWritable, tryEnd or endWithoutBody), so the router runs
 * only on a native build; a setting asking for the fallback is refused at start, with what to run
 * instead, rather than ignored. `false` (or unset) is accepted as it always was.
 */
function refuseUwsFallback(raw: string | undefined): void {
  if (!booleanSetting('ROUTER_ALLOW_UWS_FALLBACK', raw, false)) return;
  throw new UsageError(
    'ROUTER_ALLOW_UWS_FALLBACK=true is no longer supported: the router runs only on a native uWebSockets.js build ' +
      '(Node 20, 22 or 24 on linux x64/arm64 with glibc >= 2.38, or Node 20 on an older glibc; see docs/deploy.md, "Supported runtimes"). ' +
      'Unset it, or set it to false.',
  );
}

function durationMs(name: string, raw: string | undefined, fallback: number, range: DurationRange): number {
  try {
    return durationSetting(name, raw, fallback, range);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

const ABOVE_ZERO: DurationRange = { min: 0, max: Infinity, aboveMin: true };

export const DEFAULT_WORKER_WATCHDOG_MS = 30_000;
/** A worker says it is alive every second: a watchdog shorter than a few seconds would kill healthy ones. */
const MIN_WORKER_WATCHDOG_MS = 3_000;

/** ROUTER_WORKER_WATCHDOG: 0 (off), or from 3 s to 10 min. */
function workerWatchdog(raw: string | undefined): number {
  const ms = durationMs('ROUTER_WORKER_WATCHDOG', raw, DEFAULT_WORKER_WATCHDOG_MS, { min: 0, max: 600_000 });
  if (ms !== 0 && ms < MIN_WORKER_WATCHDOG_MS) throw new UsageError(badSetting('ROUTER_WORKER_WATCHDOG', '0 (never) or a duration from 3s to 10m, such as 30s', raw ?? ''));
  return ms;
}

/** What the command line asks for: --help or --version (the first one given) wins over running. */
export function parseCommand(argv: readonly string[]): 'help' | 'version' | 'run' {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--help' || arg === '-h') return 'help';
    if (arg === '--version' || arg === '-V') return 'version';
    if (FLAGS_WITH_VALUE.has(arg)) i++;
  }
  return 'run';
}

/** A Gateway's `<namespace>/<name>`: a DNS label, then an object name of the Gateway API (a DNS subdomain). */
const GATEWAY_KEY = /^(?=[^/]{1,63}\/)[a-z0-9]([-a-z0-9]*[a-z0-9])?\/(?=[^/]{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** A Kubernetes namespace name: a DNS label (RFC 1123), at most 63 lower-case letters, digits and '-'. */
const NAMESPACE = /^(?=.{1,63}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** ROUTER_NAMESPACE, or null when unset or empty (all namespaces). */
function namespaceSetting(raw: string | undefined): string | null {
  if (raw === undefined || raw === '') return null;
  if (!NAMESPACE.test(raw)) {
    throw new UsageError(badSetting('ROUTER_NAMESPACE', 'a Kubernetes namespace name: at most 63 lower-case letters, digits and \'-\', beginning and ending with a letter or digit, e.g. kthena-system', raw));
  }
  return raw;
}

/** ROUTER_GATEWAY, or null when unset or empty. */
function gatewaySetting(raw: string | undefined): string | null {
  if (raw === undefined || raw === '') return null;
  if (!GATEWAY_KEY.test(raw)) {
    throw new UsageError(badSetting('ROUTER_GATEWAY', 'the Gateway whose ModelRoutes this router serves, as <namespace>/<name> of lower-case letters, digits, \'-\' (and \'.\' in the name), e.g. kthena-system/default', raw));
  }
  return raw;
}

/** ROUTER_LOG_FORMAT, or ACCESS_LOG_FORMAT's choice when unset; a bad value throws a UsageError. */
export function logFormat(env: NodeJS.ProcessEnv): 'json' | 'text' {
  const raw = env.ROUTER_LOG_FORMAT;
  if (raw === undefined || raw === '') return env.ACCESS_LOG_FORMAT === 'json' ? 'json' : 'text';
  if (raw !== 'json' && raw !== 'text') throw new UsageError(badSetting('ROUTER_LOG_FORMAT', 'json or text', raw));
  return raw;
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
    if (!FLAGS_WITH_VALUE.has(arg)) throw new UsageError(unknownOption(argv[i]));
    if (value === undefined) {
      value = argv[++i];
      if (value === undefined) throw new UsageError(`${arg} needs a value`);
    }
    // Given empty (`--host "$ADDR"` with ADDR unset), not taken for absent: the default would
    // apply unnoticed, e.g. listening on every interface.
    if (value.trim() === '') throw new UsageError(`${arg} needs a value, got an empty one`);
    flags.set(arg, value);
  }

  const pick = (flag: string, envName: string): string | undefined => {
    const v = flags.get(flag) ?? env[envName];
    return v === undefined || v === '' ? undefined : v;
  };
  /**
   * The flag's value read, else the variable's; undefined when neither is given. A variable the
   * flag overrides is read all the same: a bad value there is refused, not left to surface the
   * day the flag is dropped.
   */
  const flagOrEnv = <T>(flag: string, envName: string, read: (name: string, raw: string) => T): T | undefined => {
    const given = flags.get(flag);
    const fromFlag = given === undefined ? undefined : read(flag, given);
    const raw = env[envName];
    if (raw === undefined || raw === '') return fromFlag;
    try {
      const fromEnv = read(envName, raw);
      return fromFlag ?? fromEnv;
    } catch (err) {
      if (given === undefined || !(err instanceof UsageError)) throw err;
      throw new UsageError(`${err.message} (${flag} overrides it, but a bad value is refused all the same)`);
    }
  };

  const sourceEnv = env.ROUTER_SOURCE;
  if (sourceEnv !== undefined && sourceEnv !== '' && sourceEnv !== 'file' && sourceEnv !== 'kubernetes') {
    throw new UsageError(badSetting('ROUTER_SOURCE', 'file or kubernetes', sourceEnv));
  }
  const source = kubernetes || sourceEnv === 'kubernetes' ? 'kubernetes' : 'file';
  const resources = pick('--resources', 'ROUTER_RESOURCES') ?? null;
  if (source === 'file' && resources === null) {
    throw new UsageError('no resources: give --resources FILE (or ROUTER_RESOURCES), or --kubernetes');
  }
  if (source === 'kubernetes' && flags.has('--resources')) {
    throw new UsageError(`--resources and ${kubernetes ? '--kubernetes' : 'ROUTER_SOURCE=kubernetes'} exclude each other`);
  }

  const port = flagOrEnv('--port', 'ROUTER_PORT', (name, raw) => parseIntIn(name, raw, 1, 65535));
  const host = flagOrEnv('--host', 'ROUTER_HOST', listenHost);
  const workers = flagOrEnv('--workers', 'ROUTER_WORKERS', (name, raw) => parseIntIn(name, raw, 1, 256));
  const bodyRaw = env.ROUTER_MAX_BODY_BYTES;
  const headRaw = env.ROUTER_MAX_HEADER_BYTES;
  const resourcesMaxRaw = env.ROUTER_RESOURCES_MAX_BYTES;
  const apiGroup = env.ROUTER_API_GROUP || 'networking.serving.volcano.sh';
  if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(apiGroup)) {
    throw new UsageError(badSetting('ROUTER_API_GROUP', 'a DNS name such as networking.serving.volcano.sh', apiGroup));
  }

  refuseUwsFallback(env.ROUTER_ALLOW_UWS_FALLBACK);
  const tls = listenerTls(env, (m) => new UsageError(m));
  return Object.freeze({
    source,
    resources: source === 'file' ? resources : null,
    // Not 0: every worker would listen on a port of its own choosing, none of them known.
    port: port ?? 8080,
    host: host ?? '0.0.0.0',
    tls,
    workers: workers ?? availableParallelism(),
    apiGroup,
    namespace: namespaceSetting(env.ROUTER_NAMESPACE),
    gateway: gatewaySetting(env.ROUTER_GATEWAY),
    drainTimeoutMs: durationMs('ROUTER_DRAIN_TIMEOUT', env.ROUTER_DRAIN_TIMEOUT, 30_000, ABOVE_ZERO),
    workerWatchdogMs: workerWatchdog(env.ROUTER_WORKER_WATCHDOG),
    upstreamTimeoutMs: durationMs('ROUTER_UPSTREAM_TIMEOUT', env.ROUTER_UPSTREAM_TIMEOUT, 300_000, ABOVE_ZERO),
    maxBodyBytes: bodyRaw === undefined || bodyRaw === ''
      ? 16 * 1024 * 1024
      : parseIntIn('ROUTER_MAX_BODY_BYTES', bodyRaw, 1, 1024 * 1024 * 1024),
    maxHeaderBytes: headRaw === undefined || headRaw === ''
      ? DEFAULT_MAX_HEADER_BYTES
      : parseIntIn('ROUTER_MAX_HEADER_BYTES', headRaw, 1024, 1024 * 1024),
    maxHeaderBytesSet: headRaw !== undefined && headRaw !== '',
    resourcesMaxBytes: resourcesMaxRaw === undefined || resourcesMaxRaw === ''
      ? 4 * 1024 * 1024
      : parseIntIn('ROUTER_RESOURCES_MAX_BYTES', resourcesMaxRaw, 1, 1024 * 1024 * 1024),
    localLeases: booleanSetting('RATE_LIMIT_LOCAL_LEASES', env.RATE_LIMIT_LOCAL_LEASES, true),
    authConfig: env.ROUTER_AUTH_CONFIG || null,
    drainDelayMs: durationMs('ROUTER_DRAIN_DELAY', env.ROUTER_DRAIN_DELAY, 5_000, { min: 0, max: 600_000 }),
    logFormat: logFormat(env),
    workerSemiSpaceMb: env.ROUTER_WORKER_SEMI_SPACE_MB === undefined || env.ROUTER_WORKER_SEMI_SPACE_MB === ''
      ? DEFAULT_WORKER_SEMI_SPACE_MB
      : parseIntIn('ROUTER_WORKER_SEMI_SPACE_MB', env.ROUTER_WORKER_SEMI_SPACE_MB, 0, 256),
    upstreamConnections: env.ROUTER_UPSTREAM_CONNECTIONS === undefined || env.ROUTER_UPSTREAM_CONNECTIONS === ''
      ? DEFAULT_UPSTREAM_CONNECTIONS
      : parseIntIn('ROUTER_UPSTREAM_CONNECTIONS', env.ROUTER_UPSTREAM_CONNECTIONS, 1, 65535),
    upstreamIdleTimeoutMs: durationMs('ROUTER_UPSTREAM_IDLE_TIMEOUT', env.ROUTER_UPSTREAM_IDLE_TIMEOUT, DEFAULT_UPSTREAM_IDLE_TIMEOUT_MS, { min: 100, max: 3_600_000 }),
    upstreamConnectTimeoutMs: durationMs('ROUTER_UPSTREAM_CONNECT_TIMEOUT', env.ROUTER_UPSTREAM_CONNECT_TIMEOUT, DEFAULT_UPSTREAM_CONNECT_TIMEOUT_MS, { min: 100, max: 300_000 }),
    upstreamIdleRaceMs: durationMs('ROUTER_UPSTREAM_IDLE_RACE', env.ROUTER_UPSTREAM_IDLE_RACE, DEFAULT_UPSTREAM_IDLE_RACE_MS, { min: 0, max: 10_000 }),
  });
}

/**
 * The listen address as given, with an IPv6 address's brackets taken off (`[::]`, as URLs write
 * it, is `::`). An address with a port (`0.0.0.0:8080`) is refused: the port is --port.
 */
export function listenHost(name: string, raw: string): string {
  const host = raw.trim();
  if (host.startsWith('[') || host.endsWith(']')) {
    const inner = host.slice(1, -1);
    if (host.startsWith('[') && host.endsWith(']') && isIPv6(inner)) return inner;
    throw new UsageError(badSetting(name, 'an address or host name (an IPv6 address with or without brackets)', raw));
  }
  const withPort = /^(.*):(\d+)$/.exec(host);
  if (withPort !== null && !isIPv6(host) && withPort[1] !== '' && isIP(withPort[1]) !== 6) {
    throw new UsageError(badSetting(name, `the address alone ("${withPort[1]}"), the port is --port (ROUTER_PORT)`, raw));
  }
  return host;
}
