import type { Cluster, Redis } from 'ioredis';
import type { LimiterClient } from './connection.js';
import { KEY_PREFIX } from './key-base.js';
import { ACL_CHECK_LUA, SCRIPT_COMMANDS } from './lua/acl-check.js';

/** The key the check asks about: one of the limiter's (the ACL decides by its name; it is not touched). */
const CHECKED_KEY = `${KEY_PREFIX}{acl-check}:in:minute:0`;

/**
 * The commands the limiter's scripts call that the client's Redis user may not run on the
 * limiter's keys (lua/acl-check.ts), on a Redis Cluster those refused by any primary (each node
 * has its own ACL): [] when none is, or when Redis cannot tell (before Redis 7: no
 * `redis.acl_check_cmd`). A script that Redis refuses part-way keeps what it wrote before the
 * refused command (a key without its expiry, when PEXPIRE is refused), so none should run then.
 * Rejects as the call does (the connection lost, EVAL itself refused, ...), or when the reply is
 * not one the check gives.
 */
export async function refusedScriptCommands(client: LimiterClient): Promise<string[]> {
  const nodes: (Redis | Cluster)[] = client.isCluster ? (client as Cluster).nodes('master') : [client];
  const replies = await Promise.all(nodes.map((n) => n.eval(ACL_CHECK_LUA, 0, CHECKED_KEY) as Promise<unknown>));
  const refused = new Set<string>();
  for (const r of replies) {
    if (r === null) continue;
    if (typeof r !== 'string') throw new Error('malformed reply to the check of the Redis user\'s permissions');
    for (const c of r.split(' ')) refused.add(c);
  }
  return SCRIPT_COMMANDS.map((c) => c.name).filter((c) => refused.has(c));
}

/**
 * The error line for commands the check refused: the user, the commands, and the ACL rule that
 * grants them (with the key pattern too when every command on a key was refused: the user's
 * keys are likely not those of the limiter).
 */
export function aclRefusalLine(store: string, user: string, refused: readonly string[], failureMode: string, cluster: boolean): string {
  const onKeys = SCRIPT_COMMANDS.filter((c) => c.args.includes('KEY')).every((c) => refused.includes(c.name));
  const rules = [...(onKeys ? [`~${KEY_PREFIX}*`] : []), ...refused.map((c) => `+${c}`)].join(' ');
  return `rate limit store ${store}: the Redis user ${user} may not run ${refused.map((c) => c.toUpperCase()).join(', ')} ` +
    `on the limiter's keys (${KEY_PREFIX}*), which its scripts call; failure mode "${failureMode}" applies, and no script runs, ` +
    `until it may: grant ${refused.length === 1 ? 'it' : 'them'} with ACL SETUSER ${user} ${rules}${cluster ? ' on every node' : ''}`;
}
