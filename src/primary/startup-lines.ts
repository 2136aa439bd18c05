import type { ModelRoute, ResourceSnapshot } from '../config/resource-types.js';
import type { OpsFields } from '../observe/ops-log.js';
import type { Settings } from '../settings.js';

export interface OpsLine {
  readonly message: string;
  readonly fields: OpsFields;
}

/**
 * The line of a loaded (version 1) or reloaded snapshot: how many routes and servers, and their
 * names; then the ModelServers no route targets (`untargeted`), left out of the snapshot, if any.
 */
export function describeResources(s: ResourceSnapshot, source: string, untargeted: readonly string[] = [], serversOnly = false): OpsLine {
  const routes = s.routes.map((r) => r.key);
  const servers = s.servers.map((m) => m.key);
  const verb = s.version === 1 ? 'loaded' : 'reloaded';
  const left = untargeted.length === 0 ? '' : `; ${untargeted.length} ModelServers no route served targets, not used (their pods neither scraped nor connected to) [${named(untargeted)}]`;
  // The routes as they were: the workers keep them as compiled and take the servers alone (messages.ts core:servers).
  const only = serversOnly ? '; only ModelServers changed: the routes stay as compiled' : '';
  return {
    message: `resources ${verb} from ${source} (snapshot ${s.version}): ${routes.length} routes [${named(routes)}], ` +
      `${servers.length} servers [${named(servers)}]${left}${only}`,
    fields: {
      applied: true, snapshot: s.version, routes: routes.slice(0, NAMES_LISTED), servers: servers.slice(0, NAMES_LISTED), untargetedServers: untargeted.slice(0, NAMES_LISTED),
      routeCount: routes.length, serverCount: servers.length, untargetedCount: untargeted.length, ...(serversOnly ? { serversOnly: true } : {}),
    },
  };
}

/**
 * Names a line lists of one kind: a large fleet's every route on every reload (20,000 routes: 450 KB
 * a line) would flood the log; the counts are given whole.
 */
export const NAMES_LISTED = 50;

/** `keys` for a line: the first NAMES_LISTED, then how many more. */
function named(keys: readonly string[]): string {
  if (keys.length <= NAMES_LISTED) return keys.join(', ');
  return `${keys.slice(0, NAMES_LISTED).join(', ')}, … and ${keys.length - NAMES_LISTED} more`;
}

/** An address without its user and password (credentials come from REDIS_USERNAME / REDIS_PASSWORD). */
function redact(address: string): string {
  return address.replace(/\/\/[^@/]*@/, '//');
}

/** The rate-limit stores the routes use: the instance-local one always, one Redis per address of a global limit. */
export function describeLimitStores(routes: readonly ModelRoute[], settings: Settings): OpsLine {
  const redis = [...new Set(routes.flatMap((r) => (r.rateLimit?.global ? [redact(r.rateLimit.global.redis.address)] : [])))].sort();
  const local = settings.localLeases ? 'local (workers lease slices)' : 'local (the primary decides)';
  const global = redis.length === 0
    ? 'no Redis'
    : `redis [${redis.join(', ')}] (failure mode ${settings.redisLimits.failureMode}, timeout ${settings.redisLimits.timeoutMs} ms` +
      `${settings.redisLimits.tls ? ', TLS' : ''}${settings.redisLimits.cluster ? ', cluster' : ''}${settings.redisLimits.leases ? ', workers lease slices' : ', every admission in Redis'})`;
  return {
    message: `rate limit stores: ${local}, ${global}`,
    fields: { local: settings.localLeases ? 'leases' : 'primary', redis, failureMode: settings.redisLimits.failureMode },
  };
}
