import { describe, expect, it } from 'vitest';
import { failureHint } from '../../../src/ratelimit/redis/failure-hint.js';

// The messages below are those redis-server 7.0 and the client gave, seen in the operational log.
describe('failureHint: what to do, appended to the line saying the store is unreachable or unavailable', () => {
  it('names the settings for refused credentials', () => {
    for (const reason of ['NOAUTH Authentication required.', 'WRONGPASS invalid username-password pair or user is disabled.', 'ERR invalid password']) {
      expect(failureHint(reason, false), reason).toBe("Redis refused the router's credentials: check REDIS_USERNAME and REDIS_PASSWORD in the router's environment");
    }
  });

  it('a TLS connection that timed out may be a port without TLS; a plain one that timed out gets no guess', () => {
    expect(failureHint('connect ETIMEDOUT', true)).toMatch(/^no TLS connection within the connect timeout: the host did not answer, or the port does not speak TLS/);
    expect(failureHint('connect ETIMEDOUT', false)).toBeNull();
  });

  it('names the address for a refused connection and a name that does not resolve', () => {
    expect(failureHint('connect ECONNREFUSED 127.0.0.1:41181', false)).toBe('nothing listens there: check global.redis.address and that Redis runs');
    expect(failureHint('getaddrinfo ENOTFOUND redis.nowhere.invalid', false)).toBe('the host name does not resolve: check global.redis.address');
  });

  it('Redis refusing the script: ACL, maxmemory, a replica, a long script', () => {
    expect(failureHint("ERR The user executing the script can't run this command or subcommand script: 4794d7b0, on @user_script:129.", false)).toMatch(/^the Redis user may not run a command/);
    expect(failureHint("NOPERM this user has no permissions to run the 'evalsha' command", false)).toMatch(/^the Redis user may not run a command/);
    expect(failureHint("OOM command not allowed when used memory > 'maxmemory'. script: 4794d7b0, on @user_script:159.", false)).toMatch(/^Redis is at its maxmemory/);
    expect(failureHint("READONLY You can't write against a read only replica.", false)).toBe('the address names a read-only replica: name the primary');
    expect(failureHint('BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.', false)).toMatch(/^Redis is running a long script/);
  });

  it('nothing for what the message says by itself', () => {
    expect(failureHint('connection closed', false)).toBeNull();
    expect(failureHint('Command timed out', false)).toBeNull();
    expect(failureHint('read ECONNRESET', true)).toBeNull();
  });
});
