/**
 * One run of redis-call-instructions.ts: `node redis-call-instructions-runner.js <tree> <redis
 * address> <admissions> <turns>` runs `turns` turns through that tree's global limiter with leases
 * off (every admission decided by the batch script, as RATE_LIMIT_REDIS_LEASES=false): each turn
 * asks `admissions` admissions of one route, waits for their decisions and for the settles of the
 * turn before (which ride along with these admissions' script call), then settles this turn's
 * requests. So a turn is one script call carrying `admissions` admissions and as many settles,
 * as under load when that many requests of a route arrive in one event-loop turn.
 */
import { join } from 'node:path';

const [tree, address, admissionsArg, turnsArg] = process.argv.slice(2);
const admissions = Number(admissionsArg);
const turns = Number(turnsArg);
const dist = join(tree, 'dist');
const { CounterStore } = await import(join(dist, 'ratelimit/local/counter-store.js')) as typeof import('../src/ratelimit/local/counter-store.js');
const { RedisLimiter } = await import(join(dist, 'ratelimit/redis/limiter.js')) as typeof import('../src/ratelimit/redis/limiter.js');
const { parseRedisLimitSettings } = await import(join(dist, 'ratelimit/redis/settings.js')) as typeof import('../src/ratelimit/redis/settings.js');
const { routeLimitKey } = await import(join(dist, 'ratelimit/limit-key.js')) as typeof import('../src/ratelimit/limit-key.js');
import type { RateLimitSpec } from '../src/config/resource-types.js';

const LIMIT: RateLimitSpec = { inputTokensPerUnit: Number.MAX_SAFE_INTEGER, outputTokensPerUnit: 1e12, unit: 'day', global: null, mode: 'enforce' };
// Under valgrind a call takes tens of milliseconds: a long timeout, so that none is timed out.
const settings = parseRedisLimitSettings({ RATE_LIMIT_REDIS_FAILURE_MODE: 'closed', RATE_LIMIT_REDIS_TIMEOUT: '30s', RATE_LIMIT_REDIS_LEASES: 'false' });
const limiter = new RedisLimiter(address, settings, new CounterStore(), { log: (m) => console.error(m) });
while (limiter.state !== 'up') await new Promise((r) => setTimeout(r, 10));
const key = routeLimitKey('default/bench-route');

let settles: Promise<void>[] = [];
for (let t = 0; t < turns; t++) {
  const decisions = [];
  for (let i = 0; i < admissions; i++) decisions.push(limiter.admit(key, LIMIT, 4));
  await Promise.all(settles);
  for (const d of await Promise.all(decisions)) if (!d.allowed) throw new Error('an admission was refused: the bench limit is too low');
  settles = [];
  for (let i = 0; i < admissions; i++) settles.push(Promise.resolve(limiter.settle!(key, LIMIT, 1, 16)));
}
await Promise.all(settles);
await limiter.close();
