/**
 * The global limiter over TLS: a redis-server listening with TLS only, its certificate signed by
 * a throwaway CA made with openssl. The limiter connects with a rediss:// address or REDIS_TLS=true,
 * trusting the CA through REDIS_TLS_CA_FILE, and refuses a server it cannot verify.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RateLimitSpec } from '../../../src/config/resource-types.js';
import { LimitStoreUnavailableError } from '../../../src/ratelimit/errors.js';
import { RedisLimiter } from '../../../src/ratelimit/redis/limiter.js';
import { parseRedisLimitSettings } from '../../../src/ratelimit/redis/settings.js';
import { RedisServer } from '../../helpers/redis-server.js';
import { createTestCa, type TestCa } from '../../helpers/test-ca.js';
import { NO_FALLBACK } from './no-fallback.js';

const EXAMPLE: RateLimitSpec = { inputTokensPerUnit: 10, outputTokensPerUnit: 5000, unit: 'minute', global: null, mode: 'enforce' };
const T0 = Date.UTC(2025, 0, 15, 10, 30, 20);
const START = (T0 - (T0 % 60_000)) / 1000;


let ca: TestCa;
let server: RedisServer;
const limiters: RedisLimiter[] = [];
let seq = 0;
const uniqueRoute = (): string => `tls-${process.pid}/r${++seq}`;

beforeAll(async () => {
  ca = await createTestCa();
  server = await RedisServer.start({ tls: ca });
});

afterAll(async () => {
  await Promise.all(limiters.map((l) => l.close()));
  await server?.stop();
  ca?.remove();
});

function limiter(address: string, env: NodeJS.ProcessEnv, logs: string[] = []): RedisLimiter {
  const settings = parseRedisLimitSettings({ RATE_LIMIT_REDIS_FAILURE_MODE: 'closed', RATE_LIMIT_REDIS_TIMEOUT: '2s', ...env });
  const l = new RedisLimiter(address, settings, NO_FALLBACK, { clock: () => T0, log: (m) => logs.push(m) });
  limiters.push(l);
  return l;
}

async function until(what: string, cond: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The documented example decided by the TLS server: 4 + 4 admitted, the third rejected by input. */
async function expectDocumentedExample(l: RedisLimiter): Promise<void> {
  await until('limiter healthy', () => l.state === 'up');
  const r = uniqueRoute();
  const d = [await l.admit(r, EXAMPLE, 4), await l.admit(r, EXAMPLE, 4), await l.admit(r, EXAMPLE, 4)];
  expect(d.map((x) => x.allowed)).toEqual([true, true, false]);
  expect(d[2].rejectedBy).toBe('input');
  await l.settle(r, EXAMPLE, 1, 12);
  expect(await server.cli('get', `ir:{${r}}:in:minute:${START}`)).toBe('9');
  expect(await server.cli('get', `ir:{${r}}:out:minute:${START}`)).toBe('12');
}

describe('RedisLimiter over TLS', () => {
  it('the test server speaks TLS only: a plain connection gets no answer', async () => {
    const plain = limiter(server.address, {}, []);
    await expect(plain.admit(uniqueRoute(), EXAMPLE, 4)).rejects.toThrow(LimitStoreUnavailableError);
    expect(plain.state).not.toBe('up');
  });

  it('rediss://127.0.0.1:<port> with REDIS_TLS_CA_FILE trusting the private CA', async () => {
    await expectDocumentedExample(limiter(`rediss://${server.address}`, { REDIS_TLS_CA_FILE: ca.caFile }));
  });

  it('REDIS_TLS=true with a host:port address', async () => {
    await expectDocumentedExample(limiter(server.address, { REDIS_TLS: 'true', REDIS_TLS_CA_FILE: ca.caFile }));
  });

  it('the server certificate is verified: without the CA the store is unavailable, the log names the certificate problem', async () => {
    const logs: string[] = [];
    const untrusted = limiter(`rediss://${server.address}`, {}, logs);
    await expect(untrusted.admit(uniqueRoute(), EXAMPLE, 4)).rejects.toThrow(LimitStoreUnavailableError);
    expect(untrusted.state).not.toBe('up');
    await until('the outage line', () => logs.length > 0);
    expect(logs.join('\n')).toMatch(/certificate/i);
  });
});

describe('TLS settings and a Redis without TLS', () => {
  let plain: RedisServer;
  beforeAll(async () => {
    plain = await RedisServer.start();
  });
  afterAll(async () => {
    await plain?.stop();
  });

  // A port without TLS reads the TLS hello as the start of a command and never answers: the
  // client's connect timeout ends it, which alone ("connect ETIMEDOUT") read as a network problem.
  it('REDIS_TLS=true at a port without TLS: unreachable, and the line says the port may not speak TLS', async () => {
    const logs: string[] = [];
    const settings = parseRedisLimitSettings({ RATE_LIMIT_REDIS_FAILURE_MODE: 'closed', REDIS_TLS: 'true', REDIS_TLS_CA_FILE: ca.caFile });
    const l = new RedisLimiter(plain.address, settings, NO_FALLBACK, { log: (m) => logs.push(m), connectTimeoutMs: 300 });
    limiters.push(l);
    await until('the outage line', () => logs.length > 0);
    expect(l.state).not.toBe('up');
    expect(logs[0]).toMatch(/is unreachable at start \(connect ETIMEDOUT\); failure mode "closed" applies until it answers; no TLS connection within the connect timeout: the host did not answer, or the port does not speak TLS/);
  });

  // Before, the CA file was read and checked at start, then silently not used: the connection went in clear.
  it('REDIS_TLS_CA_FILE with a plain address and REDIS_TLS unset: works without TLS, and a warn line says the CA file is not used', async () => {
    const logs: string[] = [];
    const l = limiter(plain.address, { REDIS_TLS_CA_FILE: ca.caFile }, logs);
    await until('limiter healthy', () => l.state === 'up');
    expect(logs).toEqual([`rate limit store ${plain.address}: REDIS_TLS_CA_FILE is set, but this address is reached without TLS (it is not a rediss:// URL, ` +
      'and REDIS_TLS is not true), so the CA file is not used: for TLS, set REDIS_TLS=true or write the address as rediss://host:port']);
  });
});
