import type { Redis } from 'ioredis';
import type { LimiterClient } from './connection.js';

/**
 * Whether the connection is on the database its address names (`redis://host:port/N`): null when
 * it is (N is 0, or SELECT N answers OK), else why not (Redis's error: `ERR DB index is out of
 * range`, or an ACL refusing SELECT). ioredis selects the database as it connects, but a refused
 * SELECT only emits an error: the connection is still `ready`, on database 0, where the counts of
 * another fleet (kept apart by its database) may live. SELECT again here makes the check exact.
 * A Redis Cluster has database 0 only (an address with another is refused at validation).
 */
export async function databaseRefusal(client: LimiterClient, db: number): Promise<string | null> {
  if (db === 0 || client.isCluster) return null;
  try {
    await (client as Redis).select(db);
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}
