/**
 * Which headers cross the router. Hop-by-hop headers (RFC 9110 §7.6.1: the fixed list plus every
 * header a `Connection` header names) stop here in both directions; headers the router writes
 * itself are not copied.
 */

/** Request headers never forwarded upstream (hop-by-hop, or recomputed by the router). */
const DROP_REQUEST = new Set([
  'host', 'connection', 'keep-alive', 'transfer-encoding', 'content-length', 'te', 'trailer', 'upgrade',
  'proxy-authorization', 'proxy-connection', 'expect', 'x-request-id',
  // The router sends its own `content-type: application/json` (the body it forwards is JSON).
  'content-type',
]);

/** Response headers never copied to the client (hop-by-hop, or written by uWS itself). */
const DROP_RESPONSE = new Set([
  'connection', 'keep-alive', 'transfer-encoding', 'content-length', 'date', 'te', 'trailer', 'upgrade', 'proxy-connection',
  'x-request-id',
  // uWS writes its own server header; a uWS backend's copy would appear twice.
  'uwebsockets',
]);

export function forwardRequestHeader(lowerName: string): boolean {
  return !DROP_REQUEST.has(lowerName);
}

export function forwardResponseHeader(lowerName: string): boolean {
  return !DROP_RESPONSE.has(lowerName);
}

/** True for the backend's `x-ratelimit-*` headers (dropped on limited routes: the router's win). */
export function isRateLimitHeader(lowerName: string): boolean {
  return lowerName.length > 12 && lowerName.startsWith('x-ratelimit-');
}

/**
 * Lower-case names a `Connection` header value lists (`close` and `keep-alive` are options, not
 * names, but dropping them is harmless). Empty for '' or undefined.
 */
export function connectionNames(value: string | string[] | undefined): string[] {
  if (value === undefined || value.length === 0 || value === 'keep-alive' || value === 'close') return NONE;
  const text = Array.isArray(value) ? value.join(',') : value;
  const names: string[] = [];
  for (const part of text.split(',')) {
    const name = part.trim().toLowerCase();
    if (name.length > 0 && name !== 'close' && name !== 'keep-alive') names.push(name);
  }
  return names.length === 0 ? NONE : names;
}

/** Lower-case names every `Connection` header of a flat [name, value, …] list names. */
export function connectionNamesIn(flat: readonly string[]): string[] {
  let names = NONE;
  for (let i = 0; i < flat.length; i += 2) {
    const n = flat[i];
    if (n.length !== 10 || n.toLowerCase() !== 'connection') continue;
    const more = connectionNames(flat[i + 1]);
    if (more.length > 0) names = names.length === 0 ? more : names.concat(more);
  }
  return names;
}

/**
 * A response header value as the bytes the pod sent: values are read as latin1, so one with a
 * byte above 0x7f is written back as those bytes (a string would be re-encoded as UTF-8).
 */
export function headerValue(v: string): string | Buffer {
  for (let i = 0; i < v.length; i++) if (v.charCodeAt(i) > 0x7f) return Buffer.from(v, 'latin1');
  return v;
}

/** Removes from a flat [name, value, …] list every pair whose name is in `names`. */
export function dropNamed(flat: string[], names: readonly string[]): void {
  if (names.length === 0) return;
  let w = 0;
  for (let r = 0; r < flat.length; r += 2) {
    if (names.includes(flat[r])) continue;
    flat[w++] = flat[r];
    flat[w++] = flat[r + 1];
  }
  flat.length = w;
}

const NONE: string[] = [];
