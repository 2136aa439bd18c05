/**
 * The limiter's script calls as commands of its own (script-command.ts), sent through ioredis to a
 * real redis-server: EVAL on a connection's first call and EVALSHA after, a call sent again as
 * EVAL after NOSCRIPT (the script cache flushed), other errors passed on once, and no timer of the
 * client's on a script call (the limiter times each call itself: late-reply.ts).
 */
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ioredis } from '../../../src/ratelimit/redis/ioredis-module.js';
import { ScriptArgs } from '../../../src/ratelimit/redis/script-args.js';
import { LimiterScript, sendScript } from '../../../src/ratelimit/redis/script-command.js';
import { RedisServer } from '../../helpers/redis-server.js';

const ECHO = new LimiterScript("return KEYS[1] .. ':' .. table.concat(ARGV, ',')");
const FAILS = new LimiterScript("return redis.error_reply('ERR the script refused: ' .. ARGV[1])");

let server: RedisServer;
const clients: Redis[] = [];

beforeAll(async () => {
  server = await RedisServer.start();
});

afterAll(async () => {
  for (const c of clients) c.disconnect();
  await server?.stop();
});

/** A client as the limiter makes one (no offline queue, no retries), with a short command timeout of the client's own. */
async function newClient(commandTimeout = 5_000): Promise<Redis> {
  const { Redis } = ioredis();
  const c = new Redis({ port: server.port, enableOfflineQueue: false, maxRetriesPerRequest: 0, commandTimeout, lazyConnect: true });
  clients.push(c);
  await c.connect();
  return c;
}

function echo(c: Redis, key: string, ...args: (string | number)[]): Promise<string> {
  const a = new ScriptArgs().begin().key(key);
  for (const x of args) typeof x === 'number' ? a.num(x) : a.str(x);
  return sendScript(c, ECHO, a).then((b) => b.toString('utf8'));
}

/** calls= of one command in INFO commandstats (0 when it has no line). */
async function callsOf(command: string): Promise<number> {
  const m = new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(await server.cli('info', 'commandstats'));
  return m === null ? 0 : Number(m[1]);
}

/** failed_calls + rejected_calls of one command in INFO commandstats (Redis 7 counts an error reply in one of them). */
async function refusedOf(command: string): Promise<number> {
  const line = new RegExp(`^cmdstat_${command}:(.*)$`, 'm').exec(await server.cli('info', 'commandstats'));
  if (line === null) return 0;
  const figure = (name: string): number => Number(new RegExp(`${name}=(\\d+)`).exec(line[1])?.[1] ?? 0);
  return figure('failed_calls') + figure('rejected_calls');
}

describe('script calls through ioredis', () => {
  it('the first call on a connection sends the script (EVAL), the calls after it its SHA1 (EVALSHA)', async () => {
    await server.cli('script', 'flush');
    await server.cli('config', 'resetstat');
    const c = await newClient();
    // Three at once on the new connection: the first carries the script, the two behind it use it.
    expect(await Promise.all([echo(c, 'k1', 1, 'a'), echo(c, 'k2', -2, ''), echo(c, 'k3', 'é', 3)])).toEqual(['k1:1,a', 'k2:-2,', 'k3:é,3']);
    expect(await echo(c, 'k4', 4)).toBe('k4:4');
    expect(await callsOf('eval')).toBe(1);
    expect(await callsOf('evalsha')).toBe(3);
    // Another connection sends the script again on its first call.
    const d = await newClient();
    expect(await echo(d, 'k5', 5)).toBe('k5:5');
    expect(await callsOf('eval')).toBe(2);
  });

  it('after the script cache is flushed, a call answered NOSCRIPT is sent again as EVAL and its caller gets that reply', async () => {
    const c = await newClient();
    expect(await echo(c, 'before', 1)).toBe('before:1');
    await server.cli('script', 'flush');
    await server.cli('config', 'resetstat');
    expect(await Promise.all([echo(c, 'a', 1), echo(c, 'b', 2), echo(c, 'c', 3)])).toEqual(['a:1', 'b:2', 'c:3']);
    // Each EVALSHA sent before the first NOSCRIPT came back failed; each was sent again as EVAL.
    expect(await refusedOf('evalsha')).toBe(3);
    expect(await callsOf('eval')).toBe(3);
    // Loaded again: the next call is an EVALSHA.
    await server.cli('config', 'resetstat');
    expect(await echo(c, 'after', 4)).toBe('after:4');
    expect(await callsOf('eval')).toBe(0);
    expect(await callsOf('evalsha')).toBe(1);
  });

  it('an error reply other than NOSCRIPT reaches the caller as it is, sent once', async () => {
    const c = await newClient();
    const call = (arg: string): Promise<unknown> => sendScript(c, FAILS, new ScriptArgs().begin().key('k').str(arg));
    await expect(call('first')).rejects.toThrow('ERR the script refused: first');
    await server.cli('config', 'resetstat');
    await expect(call('second')).rejects.toThrow('ERR the script refused: second');
    expect(await callsOf('eval')).toBe(0);
    expect(await server.cli('info', 'commandstats')).toMatch(/^cmdstat_evalsha:calls=1,/m);
  });

  it('keeps no timer of the client\'s: a reply later than its command timeout still reaches the caller', async () => {
    const c = await newClient(100);
    expect(await echo(c, 'warm', 0)).toBe('warm:0');
    server.pause();
    const late = echo(c, 'late', 1);
    const ping = c.ping().then(() => 'answered', (err: Error) => err.message);
    await new Promise((r) => setTimeout(r, 400));
    server.resume();
    // The client's other commands keep its timeout; the script call waited for its reply.
    expect(await ping).toBe('Command timed out');
    expect(await late).toBe('late:1');
  });
});
