import { randomFillSync } from 'node:crypto';
import { Buffer } from 'node:buffer';

const BYTES = Buffer.alloc(8);
const LOW_63 = (1n << 63n) - 1n;

/**
 * A random bootstrap room for SGLang's prefill/decode handoff, as the route API's router draws one
 * (a non-negative 63-bit integer, Go's rand.Int63): its decimal digits, since a JS number holds
 * only 53 bits exactly.
 */
export function newBootstrapRoom(): string {
  randomFillSync(BYTES);
  return (BYTES.readBigUInt64BE(0) & LOW_63).toString();
}
