import { parseRedisNodes, type RedisTarget } from '../../config/addresses.js';

export type { RedisNode, RedisTarget } from '../../config/addresses.js';

/**
 * Parses a global limit's `redis.address` (config/addresses.ts, the same parser that validated
 * the resource); with `cluster`, a comma-separated list of seed nodes. Throws an Error naming
 * the problem.
 */
export function parseRedisAddress(address: string, cluster: boolean): RedisTarget {
  const parts = address.split(',').map((p) => p.trim()).filter((p) => p !== '');
  if (parts.length === 0) throw new Error(`redis address is empty`);
  if (parts.length > 1 && !cluster) {
    throw new Error(`redis address ${JSON.stringify(address)} names several nodes; that needs REDIS_CLUSTER=true`);
  }
  const target = parseRedisNodes(parts);
  if (typeof target === 'string') throw new Error(`redis address: ${target}`);
  if (target.db > 99) throw new Error(`redis address ${JSON.stringify(address)}: database number must be 0-99, got ${target.db}`);
  if (cluster && target.db !== 0) throw new Error(`redis address ${JSON.stringify(address)}: Redis Cluster has only database 0`);
  return target;
}
