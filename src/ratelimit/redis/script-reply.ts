import { Buffer } from 'node:buffer';
import { STATUS_RECALLING } from './lua/counters.js';

const SPACE = 0x20;
const MINUS = 0x2d;
const ZERO = 0x30;
const NINE = 0x39;
/** The highest status digit (0 admitted, 1 and 2 refused, STATUS_RECALLING last). */
const LAST_STATUS = STATUS_RECALLING;

/** A reply of one of the limiter's scripts that is not the string the script returns. */
export class MalformedScriptReplyError extends Error {
  constructor(detail: string) {
    super(`the rate limit store's script answered a malformed reply: ${detail}`);
    this.name = 'MalformedScriptReplyError';
  }
}

/**
 * The reply of the batch script (lua/batch.ts) or of the admit-all script (lua/admit-all.ts) as
 * the numbers it holds: its bytes are `fields` integers, each followed by a space, then `statuses`
 * status digits. Both scripts answer one string rather than an array of integers: ioredis 6
 * decodes each integer of an array reply for about 4 thousand instructions, a string of these
 * lengths for about as much as one integer. Anything else throws MalformedScriptReplyError (the
 * call then fails as for any error of the store).
 */
export function parseScriptReply(bytes: Uint8Array, fields: number, statuses: number): number[] {
  // What the script answered decides the type: another version of it may answer an array.
  if (!(bytes instanceof Uint8Array)) throw new MalformedScriptReplyError(`expected a string, got ${Array.isArray(bytes) ? `an array of ${(bytes as unknown[]).length}` : typeof bytes}`);
  const n = bytes.length;
  const reply = new Array<number>(fields + statuses);
  let i = 0;
  for (let f = 0; f < fields; f++) {
    let negative = false;
    if (i < n && bytes[i] === MINUS) {
      negative = true;
      i++;
    }
    const start = i;
    let v = 0;
    let c = 0;
    while (i < n && (c = bytes[i]) >= ZERO && c <= NINE) {
      v = v * 10 + (c - ZERO);
      i++;
    }
    if (i === start || i - start > 16 || i >= n || bytes[i] !== SPACE) throw new MalformedScriptReplyError(`field ${f + 1} of ${fields} is not an integer followed by a space in ${quote(bytes)}`);
    i++;
    reply[f] = negative ? -v : v;
  }
  if (n - i !== statuses) throw new MalformedScriptReplyError(`${n - i} statuses where ${statuses} were asked for in ${quote(bytes)}`);
  for (let a = 0; a < statuses; a++, i++) {
    const s = bytes[i] - ZERO;
    if (s < 0 || s > LAST_STATUS) throw new MalformedScriptReplyError(`status ${a + 1} is not a digit from 0 to ${LAST_STATUS} in ${quote(bytes)}`);
    reply[fields + a] = s;
  }
  return reply;
}

/** The reply's first bytes as text, for an error message. */
function quote(bytes: Uint8Array): string {
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, 120)).toString('latin1');
  return JSON.stringify(bytes.length > 120 ? `${text}...` : text);
}
