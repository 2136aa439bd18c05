/**
 * Starts the proxy a bench scenario's target names (nginx, the bare uWS + HTTP/1.1 client floor,
 * the reference proxies, or a router with that scenario's limit mode and settings), from the bench
 * modules of a tree: compare-trees starts each side from its own tree's modules, the main bench
 * and sched-delay from this tree's.
 */
import type { LimitMode, TargetKey, TlsFiles } from './scenarios.js';
import type { Target } from './targets.js';

/** The bench modules of a tree that starting a target uses (targets.js and scenarios.js). */
export interface TargetModules {
  targets: {
    startMock(name: string, extra?: string[]): Promise<Target>;
    /** `node`: ignored by trees older than a side's own Node binary. */
    startRouter(name: string, yaml: string, workers: number, env: NodeJS.ProcessEnv, nodeArgs?: string[], node?: string): Promise<Target>;
    startRedis(bin: string): Promise<{ proc: Target['proc']; address: string }>;
    tempDir(prefix: string): string;
    startNginx(bin: string, upstreamPort: number, workers: number): Promise<Target>;
    /** `extraArgs`: ignored by trees older than the floor's calibration options. */
    startHttp1Proxy(upstream: string, workers: number, extraArgs?: readonly string[], node?: string): Promise<Target>;
    /** Absent from trees older than the reference proxies. */
    startReferenceProxy?(kind: 'node' | 'uws', upstream: string, workers: number): Promise<Target>;
  };
  scenarios: {
    routerResources(mockPort: number, longPort: number, mode: LimitMode): string;
    /** `tls`: ignored by trees older than the HTTPS listener. */
    routerEnv(target: TargetKey, logFile: string, collector?: string | null, authFile?: string | null, tls?: TlsFiles | null): NodeJS.ProcessEnv;
    limitModeOf(target: TargetKey, redis: string | null): LimitMode;
  };
}

export interface TargetStart {
  /** The router's name in its logs. */
  readonly name: string;
  readonly workers: number;
  /** The mock backends: the short answers' and the 64-chunk streams'. */
  readonly mock: Target;
  readonly mockLong: Target;
  /** The redis-server of the global-limit targets, else null. */
  readonly redis: string | null;
  /** Node flags for a router's processes. */
  readonly nodeArgs?: string[];
  /** The Node.js binary of a router or of the floor (default: the one running the bench). */
  readonly node?: string;
  /** The floor's calibration options (uws-http1-proxy: `--burn-us U`, `--garbage-objects K`). */
  readonly floorArgs?: readonly string[];
  /** nginx's binary (default: `nginx` on PATH). */
  readonly nginxBin?: string;
  /** The access log's file (default: one in a fresh temp dir). */
  readonly logFile?: string;
  /** The mock OTLP collector's URL (router-trace) and the tenant auth file (router-tenant). */
  readonly collector?: string | null;
  readonly authFile?: string | null;
  /** The HTTPS router's certificate and key (router-tls). */
  readonly tls?: TlsFiles | null;
  /** A router's environment beyond its scenario's (compare-trees --env-a/-b). */
  readonly env?: Readonly<Record<string, string>>;
}

export function startTarget(m: TargetModules, target: TargetKey, s: TargetStart): Promise<Target> {
  if (target === 'nginx') return m.targets.startNginx(s.nginxBin ?? 'nginx', s.mock.port, s.workers);
  if (target === 'uws-http1-proxy') return m.targets.startHttp1Proxy(s.mock.url, s.workers, s.floorArgs ?? [], s.node);
  if (target === 'node-proxy' || target === 'uws-proxy') {
    if (m.targets.startReferenceProxy === undefined) throw new Error(`this tree's bench cannot start ${target}`);
    return m.targets.startReferenceProxy(target === 'node-proxy' ? 'node' : 'uws', s.mock.url, s.workers);
  }
  if (!target.startsWith('router-')) throw new Error(`${target} is not a proxy this bench starts`);
  const yaml = m.scenarios.routerResources(s.mock.port, s.mockLong.port, m.scenarios.limitModeOf(target, s.redis));
  const env = m.scenarios.routerEnv(target, s.logFile ?? `${m.targets.tempDir(`ir-${s.name}-log-`)}/access.log`, s.collector ?? null, s.authFile ?? null, s.tls ?? null);
  return m.targets.startRouter(s.name, yaml, s.workers, s.env === undefined ? env : { ...env, ...s.env }, s.nodeArgs ?? [], s.node);
}
