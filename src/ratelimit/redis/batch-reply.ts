import { Buffer } from 'node:buffer';
import { FIRST_STATUS } from './batch.js';

const SPACE = 0x20;
const MINUS = 0x2d;
const ZERO = 0x30;
const NINE = 0x39;
/** The highest status digit (lua/counters.ts: 0 admitted, 1 and 2 refused, 3 recalling). */
const LAST_STATUS = 3;

/** A reply of the batch script that is not the string lua/batch.ts returns. */
export class MalformedBatchReplyError extends Error {
  constructor(detail: string) {
    super(`the rate limit store's batch script answered a malformed reply: ${detail}`);
    this.name = 'MalformedBatchReplyError';
  }
}

/**
 * The batch script's reply (lua/batch.ts) as the numbers it holds, in the order batch.ts names
 * (REPLY_MS .. REPLY_LEASES_OUT, then one status per admission from FIRST_STATUS): its bytes are
 * FIRST_STATUS integers, each followed by a space, then one status digit for each of the batch's
 * `admissions`. Anything else throws MalformedBatchReplyError (the store is then treated as
 * failed for the batch, as for any error of the call).
 */
export function parseBatchReply(bytes: Uint8Array, admissions: number): number[] {
  const n = bytes.length;
  const reply = new Array<number>(FIRST_STATUS + admissions);
  let i = 0;
  for (let f = 0; f < FIRST_STATUS; f++) {
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
    if (i === start || i - start > 16 || i >= n || bytes[i] !== SPACE) throw new MalformedBatchReplyError(`field ${f + 1} of ${FIRST_STATUS} is not an integer followed by a space in ${quote(bytes)}`);
    i++;
    reply[f] = negative ? -v : v;
  }
  if (n - i !== admissions) throw new MalformedBatchReplyError(`${n - i} statuses for ${admissions} admissions in ${quote(bytes)}`);
  for (let a = 0; a < admissions; a++, i++) {
    const s = bytes[i] - ZERO;
    if (s < 0 || s > LAST_STATUS) throw new MalformedBatchReplyError(`status ${a + 1} is not a digit from 0 to ${LAST_STATUS} in ${quote(bytes)}`);
    reply[FIRST_STATUS + a] = s;
  }
  return reply;
}

/** The reply's first bytes as text, for an error message. */
function quote(bytes: Uint8Array): string {
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, 120)).toString('latin1');
  return JSON.stringify(bytes.length > 120 ? `${text}...` : text);
}
