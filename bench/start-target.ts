/**
 * Starts the proxy a bench scenario's target names (nginx, the bare uWS + HTTP/1.1 client floor, or
 * a router with that scenario's limit mode and settings), from the bench modules of a tree:
 * compare-trees starts each side from its own tree's modules, sched-delay from this tree's.
 */
import type { LimitMode, TargetKey } from './scenarios.js';
import type { Target } from './targets.js';

/** The bench modules of a tree that starting a target uses (targets.js and scenarios.js). */
export interface TargetModules {
  targets: {
    startMock(name: string, extra?: string[]): Promise<Target>;
    startRouter(name: string, yaml: string, workers: number, env: NodeJS.ProcessEnv, nodeArgs?: string[]): Promise<Target>;
    startRedis(bin: string): Promise<{ proc: Target['proc']; address: string }>;
    tempDir(prefix: string): string;
    startNginx(bin: string, upstreamPort: number, workers: number): Promise<Target>;
    startHttp1Proxy(upstream: string, workers: number): Promise<Target>;
  };
  scenarios: {
    routerResources(mockPort: number, longPort: number, mode: LimitMode): string;
    routerEnv(target: TargetKey, logFile: string): NodeJS.ProcessEnv;
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
}

export function startTarget(m: TargetModules, target: TargetKey, s: TargetStart): Promise<Target> {
  if (target === 'nginx') return m.targets.startNginx('nginx', s.mock.port, s.workers);
  if (target === 'uws-http1-proxy') return m.targets.startHttp1Proxy(s.mock.url, s.workers);
  const yaml = m.scenarios.routerResources(s.mock.port, s.mockLong.port, m.scenarios.limitModeOf(target, s.redis));
  const env = m.scenarios.routerEnv(target, `${m.targets.tempDir(`ir-${s.name}-log-`)}/access.log`);
  return m.targets.startRouter(s.name, yaml, s.workers, env, s.nodeArgs ?? []);
}
