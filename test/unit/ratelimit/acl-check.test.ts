/**
 * The check of the Redis user's permissions asks about exactly the commands the limiter's scripts
 * call, and its error line names what to grant. (It runs against real redis-server processes in
 * redis-acl-user.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { BATCH_LUA } from '../../../src/ratelimit/redis/lua/batch.js';
import { ADMIT_ALL_LUA } from '../../../src/ratelimit/redis/lua/admit-all.js';
import { ACL_CHECK_LUA, SCRIPT_COMMANDS } from '../../../src/ratelimit/redis/lua/acl-check.js';
import { aclRefusalLine } from '../../../src/ratelimit/redis/acl-check.js';

/** The commands a script text calls (redis.call / redis.pcall with a literal name), lower case. */
function calledIn(script: string): Set<string> {
  return new Set([...script.matchAll(/redis\.p?call\(\s*'([A-Za-z|]+)'/g)].map((m) => m[1].toLowerCase()));
}

describe('the check of the Redis user', () => {
  it('asks about every command the scripts call, and only those', () => {
    const called = new Set([...calledIn(BATCH_LUA), ...calledIn(ADMIT_ALL_LUA)]);
    expect(called.size).toBeGreaterThan(0);
    expect(new Set(SCRIPT_COMMANDS.map((c) => c.name))).toEqual(called);
    // Every dynamic call would escape the list: none.
    expect(`${BATCH_LUA}${ADMIT_ALL_LUA}`).not.toMatch(/redis\.p?call\(\s*[^'\s]/);
  });

  it('its script asks the ACL of each of them, and nothing else (it writes nothing)', () => {
    for (const c of SCRIPT_COMMANDS) expect(ACL_CHECK_LUA).toContain(`redis.acl_check_cmd('${c.name}'`);
    expect(ACL_CHECK_LUA).not.toMatch(/redis\.p?call/);
  });

  it('the line names the user, the commands refused and the rule that grants them', () => {
    expect(aclRefusalLine('127.0.0.1:6379', 'router', ['del', 'pexpire'], 'closed', false)).toBe(
      'rate limit store 127.0.0.1:6379: the Redis user router may not run DEL, PEXPIRE on the limiter\'s keys (ir:*), which its scripts call; ' +
      'failure mode "closed" applies, and no script runs, until it may: grant them with ACL SETUSER router +del +pexpire');
  });

  it('every command on a key refused: the key pattern is in the rule; on a Cluster, on every node', () => {
    const keyed = SCRIPT_COMMANDS.filter((c) => c.name !== 'time').map((c) => c.name);
    expect(aclRefusalLine('a:1,b:2', 'default', keyed, 'local', true)).toMatch(/: grant them with ACL SETUSER default ~ir:\* \+get \+mget \+set \+del \+incrby \+decrby \+pexpire on every node$/);
  });
});
