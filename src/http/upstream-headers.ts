/**
 * Which headers cross the router. Hop-by-hop headers (RFC 9110 §7.6.1: the fixed list plus every
 * header a `Connection` header names) stop here in both directions; headers the router writes
 * itself are not copied.
 */
import { Buffer } from 'node:buffer';
import { isUsualHeader } from '../header-name.js';
import { isAscii } from '../ascii-text.js';

/** Request headers never forwarded upstream (hop-by-hop, or recomputed by the router). */
const DROP_REQUEST: readonly string[] = [
  'host', 'connection', 'keep-alive', 'transfer-encoding', 'content-length', 'te', 'trailer', 'upgrade',
  'proxy-authorization', 'proxy-connection', 'expect', 'x-request-id',
  // The router sends its own `content-type: application/json` (the body it forwards is JSON).
  'content-type',
];

/** Response headers never copied to the client (hop-by-hop, or written by uWS itself). */
const DROP_RESPONSE: readonly string[] = [
  'connection', 'keep-alive', 'transfer-encoding', 'content-length', 'date', 'te', 'trailer', 'upgrade', 'proxy-connection',
  'x-request-id',
  // uWS writes its own server header; a uWS backend's copy would appear twice.
  'uwebsockets',
];

/** Response headers backends commonly send that cross: known here so that they need no lower-casing. */
const COMMON_RESPONSE: readonly string[] = ['content-type', 'server', 'cache-control', 'vary', 'content-encoding'];

/**
 * Names grouped by their length, each with what it maps to. Header names arrive as fresh strings
 * (uWS's and the response parser's): a Set or Map hashes each one (about 350 instructions for a
 * lookup), where comparing it with the few names of its length costs a length check and, when the
 * lengths agree, one native comparison.
 */
class NamesByLength {
  private readonly names: string[][] = [];
  private readonly values: string[][] = [];
  /** Each name's first character code: a name of 13 characters or more cut from a head is a sliced string, which V8 compares in C++; the first character rules most candidates out first. */
  private readonly firsts: number[][] = [];

  add(name: string, value: string): void {
    const n = name.length;
    while (this.names.length <= n) {
      this.names.push([]);
      this.values.push([]);
      this.firsts.push([]);
    }
    if (this.names[n].includes(name)) return;
    this.names[n].push(name);
    this.values[n].push(value);
    this.firsts[n].push(name.charCodeAt(0));
  }

  /** The value `name` maps to, or null when it is not in the table. */
  get(name: string): string | null {
    const n = name.length;
    if (n >= this.names.length || n === 0) return null;
    const names = this.names[n];
    const firsts = this.firsts[n];
    const first = name.charCodeAt(0);
    for (let i = 0; i < names.length; i++) if (firsts[i] === first && names[i] === name) return this.values[n][i];
    return null;
  }
}

/** `content-length` → `Content-Length` (the spelling most servers send besides all lower case). */
function capitalised(lower: string): string {
  return lower.replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase());
}

const REQUEST_DROPPED = new NamesByLength();
for (const name of DROP_REQUEST) REQUEST_DROPPED.add(name, name);

/** Response names as commonly received → the name to copy under, or '' for one that stops here. */
const RESPONSE_KNOWN = new NamesByLength();
for (const name of DROP_RESPONSE) {
  RESPONSE_KNOWN.add(name, '');
  RESPONSE_KNOWN.add(capitalised(name), '');
}
RESPONSE_KNOWN.add('uWebSockets', '');
RESPONSE_KNOWN.add('X-Request-ID', '');
RESPONSE_KNOWN.add('TE', '');
for (const name of COMMON_RESPONSE) {
  RESPONSE_KNOWN.add(name, name);
  RESPONSE_KNOWN.add(capitalised(name), name);
}

/** Whether a request header (`lowerName`: uWS hands names over in lower case) is copied to the pod. */
export function forwardRequestHeader(lowerName: string): boolean {
  return REQUEST_DROPPED.get(lowerName) === null;
}

/** Whether a response header (`lowerName`: its name in lower case) is copied to the client. */
export function forwardResponseHeader(lowerName: string): boolean {
  return RESPONSE_KNOWN.get(lowerName) !== '';
}

/**
 * The lower-case name a pod's response header is copied to the client under, or null for one that
 * stops here (hop-by-hop, or one the router or uWS writes). `name` is as received, in any case.
 */
export function responseHeaderName(name: string): string | null {
  const known = RESPONSE_KNOWN.get(name);
  if (known !== null) return known.length === 0 ? null : known;
  const lower = name.toLowerCase();
  return forwardResponseHeader(lower) ? lower : null;
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

/**
 * Whether the client's `Connection` value (its headers joined by commas) holds the `close` option
 * among other options (`TE, close`, in any case), which the router must act on: uWS closes the
 * connection itself on a value of 5 characters (`close` alone), and answers a 204 without a
 * length then, which the router's own close would give one.
 */
export function asksCloseAmongOptions(value: string): boolean {
  if (value.length <= 5) return false;
  for (const part of value.split(',')) if (part.trim().toLowerCase() === 'close') return true;
  return false;
}

/** Lower-case names every `Connection` header of a flat [name, value, …] list names. */
export function connectionNamesIn(flat: readonly string[]): string[] {
  let names = NONE;
  for (let i = 0; i < flat.length; i += 2) {
    if (!isUsualHeader(flat[i], 'connection', 'Connection')) continue;
    const more = connectionNames(flat[i + 1]);
    if (more.length > 0) names = names.length === 0 ? more : names.concat(more);
  }
  return names;
}

/**
 * Header lines (`value\r\nname: value…`) as the bytes the pod sent: values are read as latin1, so
 * text with a character above 0x7f is written back as those bytes (uWS would encode a string as
 * UTF-8). One native length count tells (isAscii).
 */
export function headerBlock(text: string): string | Buffer {
  return isAscii(text) ? text : Buffer.from(text, 'latin1');
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
