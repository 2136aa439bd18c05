/**
 * One run of redis-call-instructions.ts: `node redis-call-instructions-runner.js <tree> <redis
 * address> <limits> <admissions> <turns>` runs `turns` turns through that tree's global limiter
 * with leases off (every admission decided by a script call, as RATE_LIMIT_REDIS_LEASES=false):
 * each turn asks `admissions` admissions, waits for their decisions and for the settles of the
 * turn before, then settles this turn's requests. With one limit (a route's) a turn is one call of
 * the batch script carrying the admissions and the turn before's settles, as under load when that
 * many requests of a route arrive in one event-loop turn. With two (a route's and a tenant's, both
 * global: admitAll) the admissions go in one call of the admit-all script, and the settles, one
 * per limit, in calls of the batch script of their own (they find no admission of their key to
 * ride with), as in the router.
 */
import { join } from 'node:path';

const [tree, address, limitsArg, admissionsArg, turnsArg] = process.argv.slice(2);
const limits = Number(limitsArg);
const admissions = Number(admissionsArg);
const turns = Number(turnsArg);
const dist = join(tree, 'dist');
const { CounterStore } = await import(join(dist, 'ratelimit/local/counter-store.js')) as typeof import('../src/ratelimit/local/counter-store.js');
const { RedisLimiter } = await import(join(dist, 'ratelimit/redis/limiter.js')) as typeof import('../src/ratelimit/redis/limiter.js');
const { parseRedisLimitSettings } = await import(join(dist, 'ratelimit/redis/settings.js')) as typeof import('../src/ratelimit/redis/settings.js');
const { routeLimitKey, tenantLimitKey } = await import(join(dist, 'ratelimit/limit-key.js')) as typeof import('../src/ratelimit/limit-key.js');
import type { RateLimitSpec } from '../src/config/resource-types.js';

const LIMIT: RateLimitSpec = { inputTokensPerUnit: Number.MAX_SAFE_INTEGER, outputTokensPerUnit: 1e12, unit: 'day', global: null, mode: 'enforce' };
// Under valgrind a call takes tens of milliseconds: a long timeout, so that none is timed out.
const settings = parseRedisLimitSettings({ RATE_LIMIT_REDIS_FAILURE_MODE: 'closed', RATE_LIMIT_REDIS_TIMEOUT: '30s', RATE_LIMIT_REDIS_LEASES: 'false' });
const limiter = new RedisLimiter(address, settings, new CounterStore(), { log: (m) => console.error(m) });
while (limiter.state !== 'up') await new Promise((r) => setTimeout(r, 10));
const key = routeLimitKey('default/bench-route');
const terms = [{ key, limit: LIMIT }, { key: tenantLimitKey('key', 'bench-tenant'), limit: LIMIT }].slice(0, limits);
const admit = limits === 1
  ? async (): Promise<boolean> => (await limiter.admit(key, LIMIT, 4)).allowed
  : async (): Promise<boolean> => (await limiter.admitAll!(terms, 4)).every((d) => d.allowed);

let settles: Promise<void>[] = [];
for (let t = 0; t < turns; t++) {
  const decisions = [];
  for (let i = 0; i < admissions; i++) decisions.push(admit());
  await Promise.all(settles);
  for (const allowed of await Promise.all(decisions)) if (!allowed) throw new Error('an admission was refused: the bench limit is too low');
  settles = [];
  for (let i = 0; i < admissions; i++) for (const t of terms) settles.push(Promise.resolve(limiter.settle!(t.key, t.limit, 1, 16)));
}
await Promise.all(settles);
await limiter.close();
