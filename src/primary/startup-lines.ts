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
export function describeResources(s: ResourceSnapshot, source: string, untargeted: readonly string[] = []): OpsLine {
  const routes = s.routes.map((r) => r.key);
  const servers = s.servers.map((m) => m.key);
  const verb = s.version === 1 ? 'loaded' : 'reloaded';
  const left = untargeted.length === 0 ? '' : `; ${untargeted.length} ModelServers no route served targets, not used (their pods neither scraped nor connected to) [${untargeted.join(', ')}]`;
  return {
    message: `resources ${verb} from ${source} (snapshot ${s.version}): ${routes.length} routes [${routes.join(', ')}], ` +
      `${servers.length} servers [${servers.join(', ')}]${left}`,
    fields: { applied: true, snapshot: s.version, routes, servers, untargetedServers: [...untargeted] },
  };
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
