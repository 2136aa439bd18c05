import { randomFillSync } from 'node:crypto';
import { Buffer } from 'node:buffer';

/**
 * Random (version 4) UUIDs for requests that come without an x-request-id. The same 122 random
 * bits from the same CSPRNG as crypto.randomUUID(), drawn 256 ids at a time, but written as
 * ASCII into one scratch buffer and read out as one string: randomUUID() builds its 36
 * characters from 20 string concatenations, about 0.5 KB of garbage per request on the hot path.
 */
const BATCH = 256;
const HEX = Buffer.from('0123456789abcdef', 'latin1');
const pool = Buffer.allocUnsafeSlow(16 * BATCH);
const text = Buffer.allocUnsafeSlow(36);
let next = BATCH;

export function newRequestId(): string {
  if (next === BATCH) {
    randomFillSync(pool);
    next = 0;
  }
  const at = 16 * next++;
  let j = 0;
  for (let i = 0; i < 16; i++) {
    if (i === 4 || i === 6 || i === 8 || i === 10) text[j++] = 0x2d; // '-'
    let b = pool[at + i];
    if (i === 6) b = (b & 0x0f) | 0x40; // version 4
    else if (i === 8) b = (b & 0x3f) | 0x80; // RFC 9562 variant
    text[j++] = HEX[b >> 4];
    text[j++] = HEX[b & 15];
  }
  return text.toString('latin1', 0, 36);
}
