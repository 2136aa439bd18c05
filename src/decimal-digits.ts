/**
 * Numbers written as ASCII decimal digits straight into a byte buffer, with no string made: the
 * rate-limit headers and the access log's JSON records write their numbers this way.
 */

const BILLION = 1_000_000_000;

/** Writes `n` as decimal digits at `at`; anything but a non-negative safe integer as String(n) would. */
export function putNumber(buf: Buffer, at: number, n: number): number {
  if (n >= 0 && n < 100 && (n | 0) === n) {
    // One or two digits (a record's token counts and milliseconds, a window's reset seconds).
    if (n < 10) {
      buf[at] = 48 + n;
      return at + 1;
    }
    const tens = (n * 205) >> 11; // n / 10 for n < 100
    buf[at] = 48 + tens;
    buf[at + 1] = 48 + n - tens * 10;
    return at + 2;
  }
  if (n >= 0 && n < BILLION && (n | 0) === n) return putSmall(buf, at, n);
  if (!(n >= 0 && n <= Number.MAX_SAFE_INTEGER && Math.floor(n) === n)) return at + buf.write(String(n), at, 'latin1');
  // Above 10^9: the high part, then the low nine digits zero-padded; each part fits in 32 bits.
  const high = Math.floor(n / BILLION);
  at = high < BILLION ? putSmall(buf, at, high) : putNumber(buf, at, high);
  return putDigits(buf, at, n - high * BILLION, 9);
}

/** n in 0..10^9-1, in int32 arithmetic. */
function putSmall(buf: Buffer, at: number, n: number): number {
  return putDigits(buf, at, n, digitsOf(n));
}

/** How many decimal digits n has (0 ≤ n < 10^9). */
export function digitsOf(n: number): number {
  if (n < 10) return 1;
  if (n < 100) return 2;
  if (n < 1000) return 3;
  if (n < 10000) return 4;
  if (n < 100000) return 5;
  if (n < 1000000) return 6;
  if (n < 10000000) return 7;
  if (n < 100000000) return 8;
  return 9;
}

/** The low `digits` decimal digits of n (0 ≤ n < 10^9), zero-padded. */
export function putDigits(buf: Buffer, at: number, n: number, digits: number): number {
  let v = n | 0;
  for (let k = at + digits - 1; k >= at; k--) {
    const q = (v / 10) | 0;
    buf[k] = 48 + v - q * 10;
    v = q;
  }
  return at + digits;
}
