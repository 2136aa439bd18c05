/**
 * The one validator of a `rateLimit` block: ModelRoute.spec.rateLimit (resources.ts) and the
 * tenant budgets of the auth file (auth/auth-config.ts) both use it, so they take the same fields
 * with the same checks. `fail(path, problem)` throws the caller's error type.
 */
import { redisAddressProblem } from './addresses.js';
import { describe, isPlainObject, quoted } from './describe-value.js';
import { nearName } from './near-name.js';
import { WINDOW_UNITS, type RateLimitMode, type RateLimitSpec, type WindowUnit } from './resource-types.js';

const UINT32_MAX = 4_294_967_295;
const MODES: readonly RateLimitMode[] = ['enforce', 'shadow'];

export type FailFn = (path: string, problem: string) => never;

/**
 * The validated limit, or null when `v` is absent (undefined / null). `redisCluster`
 * (REDIS_CLUSTER=true) decides which Redis addresses the router can use (addresses.ts). A block
 * with neither count is refused, unless `neitherIsNone` (a ModelRoute's, which the route API
 * reads as no limit): then it is checked all the same and null.
 */
export function parseRateLimit(v: unknown, path: string, fail: FailFn, redisCluster: boolean, neitherIsNone = false): RateLimitSpec | null {
  if (v === undefined || v === null) return null;
  const obj = mapping(v, path, fail);
  const inputTokensPerUnit = optInt(obj.inputTokensPerUnit, `${path}.inputTokensPerUnit`, fail);
  const outputTokensPerUnit = optInt(obj.outputTokensPerUnit, `${path}.outputTokensPerUnit`, fail);
  const neither = inputTokensPerUnit === null && outputTokensPerUnit === null;
  if (neither && !neitherIsNone) fail(path, 'must set inputTokensPerUnit or outputTokensPerUnit (or both)');
  // The route API defaults the unit to `second`.
  const unit = obj.unit === undefined || obj.unit === null ? 'second' : obj.unit;
  if (!WINDOW_UNITS.includes(unit as WindowUnit)) oneOf(`${path}.unit`, WINDOW_UNITS, unit, fail);
  const mode = obj.mode === undefined || obj.mode === null ? 'enforce' : obj.mode;
  if (mode === 'global' || mode === 'local') {
    // The docs speak of local and global mode: where the counts are, which `mode` does not say.
    fail(`${path}.mode`, `expected one of ${MODES.join(', ')}, got ${quoted(mode)}; ${mode} mode is not set here: ` +
      `${mode === 'global' ? `give ${path}.global.redis.address (the Redis that holds the counts)` : `leave out ${path}.global`}`);
  }
  if (!MODES.includes(mode as RateLimitMode)) oneOf(`${path}.mode`, MODES, mode, fail);
  let global: RateLimitSpec['global'] = null;
  const globalObj = obj.global === undefined || obj.global === null ? null : mapping(obj.global, `${path}.global`, fail);
  // As in the route API, where `redis` is optional: a `global` without it is a local limit.
  if (globalObj !== null && globalObj.redis !== undefined && globalObj.redis !== null) {
    const redis = mapping(globalObj.redis, `${path}.global.redis`, fail);
    const address = redis.address;
    if (typeof address !== 'string' || address === '') expected(`${path}.global.redis.address`, 'a non-empty string', address, fail);
    const problem = redisAddressProblem(address, redisCluster);
    if (problem !== null) fail(`${path}.global.redis.address`, problem);
    global = { redis: { address } };
  }
  if (neither) return null;
  return { inputTokensPerUnit, outputTokensPerUnit, unit: unit as WindowUnit, global, mode: mode as RateLimitMode };
}

function expected(path: string, what: string, got: unknown, fail: FailFn): never {
  return fail(path, got === undefined || got === null ? `is required: expected ${what}` : `expected ${what}, got ${describe(got)}`);
}

/** A value that is none of `choices`: a string quoted as written, with the choice it is likely a misspelling of (`minutes`: minute). */
function oneOf(path: string, choices: readonly string[], got: unknown, fail: FailFn): never {
  if (got === undefined || got === null) return expected(path, `one of ${choices.join(', ')}`, got, fail);
  const near = typeof got === 'string' ? nearName(got, choices) : null;
  return fail(path, `expected one of ${choices.join(', ')}, got ${quoted(got)}${near === null ? '' : `; did you mean ${near}?`}`);
}

function mapping(v: unknown, path: string, fail: FailFn): Record<string, unknown> {
  return isPlainObject(v) ? v : expected(path, 'a mapping', v, fail);
}

function optInt(v: unknown, path: string, fail: FailFn): number | null {
  if (v === undefined || v === null) return null;
  if (typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= UINT32_MAX) return v;
  return fail(path, `must be an integer from 1 to ${UINT32_MAX}, got ${describe(v)}`);
}
