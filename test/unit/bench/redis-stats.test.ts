import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { infoCommandstats, scriptCalls, scriptCallsIn, scriptUsecIn } from '../../../bench/redis-stats.js';
import { redisCommand, RedisServer } from '../../helpers/redis-server.js';

/** An INFO commandstats reply: three script commands among others. */
const INFO = '# Commandstats\r\ncmdstat_evalsha:calls=12,usec=300,usec_per_call=25.00\r\ncmdstat_get:calls=99,usec=5\r\n'
  + 'cmdstat_eval:calls=3,usec=90\r\ncmdstat_fcall:calls=2,usec=10\r\ncmdstat_config|resetstat:calls=1,usec=45\r\n';

describe('scriptCallsIn', () => {
  it('sums the calls of the script commands and nothing else', () => {
    expect(scriptCallsIn(INFO)).toBe(17);
    expect(scriptCallsIn('# Commandstats\r\n')).toBe(0);
  });
});

describe('scriptUsecIn', () => {
  it('sums the running time of the script commands and nothing else', () => {
    expect(scriptUsecIn(INFO)).toBe(400);
    expect(scriptUsecIn('# Commandstats\r\n')).toBe(0);
  });
});

describe('scriptCalls against a real redis-server', () => {
  let redis: RedisServer;
  beforeAll(async () => { redis = await RedisServer.start(); });
  afterAll(async () => { await redis.stop(); });

  it('counts each script call the server ran', async () => {
    const before = await scriptCalls(redis.address);
    await redisCommand(redis.port, 'EVAL "return 1" 0');
    await redisCommand(redis.port, 'EVAL "return 2" 0');
    await redisCommand(redis.port, 'GET x');
    expect(await scriptCalls(redis.address)).toBe(before + 2);
  });

  it('reads a whole reply, and fails clearly where nothing listens', async () => {
    expect(await infoCommandstats(redis.address)).toMatch(/^# Commandstats/);
    await redis.stop();
    await expect(scriptCalls(redis.address)).rejects.toThrow(/ECONNREFUSED/);
  });
});
