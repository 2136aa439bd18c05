/**
 * awaitReply against a real redis-server when the event loop is busy past the timeout: a reply that
 * came in time is read as in time, not taken for a timed-out call (which would decide the request
 * by RATE_LIMIT_REDIS_FAILURE_MODE). The timers are real here (late-reply.test.ts fakes them).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { awaitReply } from '../../../src/ratelimit/redis/late-reply.js';
import { RedisServer } from '../../helpers/redis-server.js';
import { busyAfterThisTurn } from '../../helpers/busy-loop.js';

let server: RedisServer;
let client: Redis;

beforeAll(async () => {
  server = await RedisServer.start();
  client = new Redis(server.address);
  await client.ping();
});

afterAll(async () => {
  client.disconnect();
  await server.stop();
});

describe('awaitReply with the event loop busy past the timeout', () => {
  it('a reply that came within the timeout is the reply', async () => {
    const seen: string[] = [];
    const done = new Promise<void>((resolve) => {
      awaitReply(client.echo('in time'), 50, {
        reply: (v) => { seen.push(`reply ${v}`); resolve(); },
        fail: (err) => { seen.push(`fail ${(err as Error).message}`); resolve(); },
        late: (v) => seen.push(`late ${v}`),
      });
    });
    // The command is written at once; redis-server answers within a millisecond while the loop is held.
    await busyAfterThisTurn(300);
    await done;
    expect(seen).toEqual(['reply in time']);
  });

  it('no reply within the timeout still fails the call', async () => {
    const seen: string[] = [];
    const start = Date.now();
    await new Promise<void>((resolve) => {
      awaitReply(new Promise<string>(() => undefined), 50, {
        reply: (v) => { seen.push(`reply ${v}`); resolve(); },
        fail: (err) => { seen.push(`fail ${(err as Error).message}`); resolve(); },
        late: (v) => seen.push(`late ${v}`),
      });
    });
    expect(seen).toEqual(['fail Command timed out']);
    expect(Date.now() - start).toBeGreaterThanOrEqual(49);
  });
});
