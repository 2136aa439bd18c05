import { parseRedisNodes, redisTargetProblem, type RedisTarget } from '../../config/addresses.js';

export type { RedisNode, RedisTarget } from '../../config/addresses.js';

/**
 * Parses a global limit's `redis.address` (config/addresses.ts, the same parser that validated
 * the resource); with `cluster`, a comma-separated list of seed nodes. Throws an Error naming
 * the problem.
 */
export function parseRedisAddress(address: string, cluster: boolean): RedisTarget {
  const parts = address.split(',').map((p) => p.trim()).filter((p) => p !== '');
  if (parts.length === 0) throw new Error(`redis address is empty`);
  const target = parseRedisNodes(parts);
  if (typeof target === 'string') throw new Error(`redis address: ${target}`);
  const problem = redisTargetProblem(target, cluster);
  if (problem !== null) throw new Error(`redis address ${JSON.stringify(address)}: ${problem}`);
  return target;
}
