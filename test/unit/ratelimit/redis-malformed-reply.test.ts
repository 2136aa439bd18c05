/**
 * A Redis whose limiter scripts answer something other than the string they return (a script of
 * another version behind the same address, a proxy that mangles replies): no real redis-server
 * does that, so the server here is a small one of the test's own that speaks RESP over TCP as
 * Redis does, answers the connection's set-up commands, PING and the check of the user's
 * permissions as Redis would (as a Redis 6 does: nothing checked), and answers every script call
 * of the limiter with `reply`. The limiter must treat such a reply as a failure of the store:
 * the call's operations go to the failure mode, one log line names the fault, nothing is decided
 * from the garbage.
 */
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { RateLimitSpec } from '../../../src/config/resource-types.js';
import { CounterStore } from '../../../src/ratelimit/local/counter-store.js';
import { LimitStoreUnavailableError } from '../../../src/ratelimit/errors.js';
import { RedisLimiter } from '../../../src/ratelimit/redis/limiter.js';
import { parseRedisLimitSettings } from '../../../src/ratelimit/redis/settings.js';
import { untilUp } from './until-up.js';

const LIMIT: RateLimitSpec = { inputTokensPerUnit: 1000, outputTokensPerUnit: null, unit: 'minute', global: null, mode: 'enforce' };
const TENANT: RateLimitSpec = { inputTokensPerUnit: 500, outputTokensPerUnit: null, unit: 'minute', global: null, mode: 'enforce' };

/** A RESP array of bulk strings from `buf` at `at`: the command's words and where it ends, or null while incomplete. */
function readCommand(buf: Buffer, at: number): { words: string[]; end: number } | null {
  const lineEnd = (from: number): number => buf.indexOf('\r\n', from);
  let e = lineEnd(at);
  if (e < 0) return null;
  if (buf[at] !== 0x2a) throw new Error(`not a RESP array: ${JSON.stringify(buf.toString('latin1', at, e))}`);
  const count = Number(buf.toString('latin1', at + 1, e));
  let i = e + 2;
  const words: string[] = [];
  for (let k = 0; k < count; k++) {
    e = lineEnd(i);
    if (e < 0) return null;
    const len = Number(buf.toString('latin1', i + 1, e));
    if (buf.length < e + 2 + len + 2) return null;
    words.push(buf.toString('latin1', e + 2, e + 2 + len));
    i = e + 2 + len + 2;
  }
  return { words, end: i };
}

/** The fake server: `reply` (a RESP-encoded answer) to every EVAL and EVALSHA of the limiter's scripts; what Redis answers to the rest. */
async function startFakeRedis(reply: string): Promise<{ address: string; scriptCalls: () => number; close(): Promise<void> }> {
  let calls = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    let pending = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      pending = Buffer.concat([pending, chunk]);
      for (;;) {
        const cmd = readCommand(pending, 0);
        if (cmd === null) break;
        pending = pending.subarray(cmd.end);
        const name = cmd.words[0].toLowerCase();
        if (name === 'eval' && cmd.words[1].includes('acl_check_cmd')) socket.write('$-1\r\n');
        else if (name === 'evalsha' || name === 'eval') {
          calls++;
          socket.write(reply);
        } else if (name === 'info') {
          const text = '# Server\r\nredis_version:7.0.15\r\n# Persistence\r\nloading:0\r\n';
          socket.write(`$${text.length}\r\n${text}\r\n`);
        } else if (name === 'ping') socket.write('+PONG\r\n');
        else if (name === 'client' || name === 'select') socket.write('+OK\r\n');
        else socket.write(`-ERR unknown command '${cmd.words[0]}'\r\n`);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    scriptCalls: () => calls,
    close: () => new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    }),
  };
}

/** A RESP bulk string. */
const bulk = (text: string): string => `$${Buffer.byteLength(text)}\r\n${text}\r\n`;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

async function limiterOn(address: string, leases: boolean): Promise<{ limiter: RedisLimiter; logs: string[] }> {
  const logs: string[] = [];
  const settings = parseRedisLimitSettings({ RATE_LIMIT_REDIS_FAILURE_MODE: 'closed', RATE_LIMIT_REDIS_TIMEOUT: '2s', RATE_LIMIT_REDIS_LEASES: String(leases) });
  const limiter = new RedisLimiter(address, settings, new CounterStore(), { log: (m) => logs.push(m), probeIntervalMs: 60_000 });
  cleanups.push(() => limiter.close());
  await untilUp(limiter, 'the limiter on the fake Redis');
  return { limiter, logs };
}

describe('a limiter script that answers a malformed reply', () => {
  it.each([
    ['an array of integers (the old reply)', '*8\r\n:1000\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n', 'expected a string, got an array of 8'],
    ['a string with a status too few', bulk('1000 0 0 0 0 0 0 0 '), '0 statuses where 1 were asked for'],
    ['a string with a letter in a field', bulk('1000 0 x 0 0 0 0 0 0'), 'field 3 of 8'],
  ])('batch script, %s: the admission goes to the failure mode and the log names the fault', async (_what, reply, fault) => {
    const fake = await startFakeRedis(reply);
    cleanups.push(() => fake.close());
    const { limiter, logs } = await limiterOn(fake.address, false);
    await expect(limiter.admit('route/default/r', LIMIT, 4)).rejects.toBeInstanceOf(LimitStoreUnavailableError);
    expect(fake.scriptCalls()).toBe(1);
    expect(limiter.state).toBe('down');
    expect(logs.join('\n')).toContain('malformed reply'); 
    expect(logs.join('\n')).toContain(fault);
  });

  it('admit-all script (a route\'s and a tenant\'s limit): the same', async () => {
    const fake = await startFakeRedis(bulk('1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 0'));
    cleanups.push(() => fake.close());
    const { limiter, logs } = await limiterOn(fake.address, false);
    const terms = [{ key: 'route/default/r', limit: LIMIT }, { key: 'tenant/key/t', limit: TENANT }];
    await expect(limiter.admitAll!(terms, 4)).rejects.toBeInstanceOf(LimitStoreUnavailableError);
    expect(fake.scriptCalls()).toBe(1);
    expect(logs.join('\n')).toContain('1 statuses where 2 were asked for');
  });

  it('a well-formed reply from the same server is decided from (the fake speaks RESP as Redis does)', async () => {
    // ms to the window end 30,000, input used 990 before, then the status: refused by input.
    const fake = await startFakeRedis(bulk('30000 990 0 0 1764288000000 0 0 0 1'));
    cleanups.push(() => fake.close());
    const { limiter } = await limiterOn(fake.address, false);
    const d = await limiter.admit('route/default/r', LIMIT, 40);
    expect({ allowed: d.allowed, rejectedBy: d.rejectedBy, retry: d.retryAfterSeconds, remaining: d.input?.remaining }).toEqual({ allowed: false, rejectedBy: 'input', retry: 30, remaining: 10 });
    expect(limiter.state).toBe('up');
  });
});
