/**
 * Validation of the token amounts every limiter takes: counts (admitted input, charged output)
 * are non-negative safe integers; deltas (input corrections, unused lease tokens) are safe
 * integers of either sign. The errors are RangeErrors naming what was wrong.
 */
export function tokenCountError(n: number, what: string): RangeError | null {
  return Number.isSafeInteger(n) && n >= 0 ? null : new RangeError(`${what} must be a non-negative integer, got ${n}`);
}

export function tokenDeltaError(n: number, what: string): RangeError | null {
  return Number.isSafeInteger(n) ? null : new RangeError(`${what} must be an integer, got ${n}`);
}

export function checkTokenCount(n: number, what: string): void {
  const err = tokenCountError(n, what);
  if (err !== null) throw err;
}

export function checkTokenDelta(n: number, what: string): void {
  const err = tokenDeltaError(n, what);
  if (err !== null) throw err;
}
