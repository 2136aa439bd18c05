/**
 * A header name compared with a known one in any case, without making a lower-cased copy: the
 * upstream client reads its framing headers with it, and the exchange the `Connection` headers
 * whose names it must not forward; the front and the upstream client also compare a
 * Transfer-Encoding with `chunked`, a token too. Names compared here are tokens (checked where
 * they were read).
 */

/** Whether `name` is `lower` (all lowercase letters and '-') in any case. */
export function isHeader(name: string, lower: string): boolean {
  const n = lower.length;
  if (name.length !== n) return false;
  for (let i = 0; i < n; i++) {
    if ((name.charCodeAt(i) | 0x20) !== lower.charCodeAt(i)) return false;
  }
  return true;
}

/**
 * isHeader, with the two spellings servers usually send (`lower` itself and `capital`, e.g.
 * `Content-Length`) compared first as whole strings, natively; any other spelling goes to
 * isHeader's loop over the characters.
 */
export function isUsualHeader(name: string, lower: string, capital: string): boolean {
  return name === lower || name === capital || isHeader(name, lower);
}
