import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { batchArgs, SHAPES } from '../../../bench/redis-script-micro.js';
import { BATCH_LUA } from '../../../src/ratelimit/redis/lua/batch.js';
import { FIRST_STATUS, REPLY_LEASE, REPLY_WINDOW } from '../../../src/ratelimit/redis/batch.js';
import { parseScriptReply } from '../../../src/ratelimit/redis/script-reply.js';
import { RedisServer } from '../../helpers/redis-server.js';

describe('redis-script-micro: each batch shape is a call the script takes as meant', () => {
  let server: RedisServer;
  let redis: Redis;
  beforeAll(async () => {
    server = await RedisServer.start();
    redis = new Redis({ port: server.port, lazyConnect: true });
    await redis.connect();
  });
  afterAll(async () => {
    redis?.disconnect();
    await server?.stop();
  });

  it.each(SHAPES.map((s) => [s.name, s] as const))('%s', async (_name, shape) => {
    const base = `ir:{micro-test/${SHAPES.indexOf(shape)}}`;
    const reply = parseScriptReply(await redis.callBuffer('EVAL', BATCH_LUA, 1, ...batchArgs(base, shape)) as Buffer, FIRST_STATUS, shape.admissions);
    // One status per admission, each admitted (the limit is never reached).
    expect(reply.slice(FIRST_STATUS)).toEqual(Array(shape.admissions).fill(0));
    expect(reply[REPLY_LEASE] > 0).toBe(shape.lease > 0);
    const day = reply[REPLY_WINDOW] / 1000;
    expect(Number(await redis.get(`${base}:out:day:${day}`) ?? 0)).toBe(shape.out);
  });
});
