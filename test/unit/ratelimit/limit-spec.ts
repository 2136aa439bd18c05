/** What the tests of the local mode's leases and refusal notes share: a time and a limit's spec. */
import type { RateLimitSpec } from '../../../src/config/resource-types.js';

/** 2025-01-15T10:30:20Z: 40 s before the minute ends. */
export const T0 = Date.UTC(2025, 0, 15, 10, 30, 20);

/** An enforced local limit (null: no limit that way). */
export function spec(input: number | null, output: number | null, unit: RateLimitSpec['unit'] = 'minute'): RateLimitSpec {
  return { inputTokensPerUnit: input, outputTokensPerUnit: output, unit, global: null, mode: 'enforce' };
}
