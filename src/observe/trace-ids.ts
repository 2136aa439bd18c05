import { randomFillSync } from 'node:crypto';
import { Buffer } from 'node:buffer';

/**
 * W3C Trace Context ids and the `traceparent` header (version 00). Random bytes are drawn in
 * blocks, so an id costs a hex conversion, not a system call.
 */

const POOL = Buffer.alloc(4096);
let poolAt = POOL.length;

function randomHex(bytes: number): string {
  if (poolAt + bytes > POOL.length) {
    randomFillSync(POOL);
    poolAt = 0;
  }
  const s = POOL.toString('hex', poolAt, poolAt + bytes);
  poolAt += bytes;
  return s;
}

const ZERO_TRACE = '00000000000000000000000000000000';
const ZERO_SPAN = '0000000000000000';

export function newTraceId(): string {
  const id = randomHex(16);
  return id === ZERO_TRACE ? newTraceId() : id;
}

export function newSpanId(): string {
  const id = randomHex(8);
  return id === ZERO_SPAN ? newSpanId() : id;
}

/** A parsed incoming `traceparent`. */
export interface ParentContext {
  readonly traceId: string;
  readonly spanId: string;
  readonly sampled: boolean;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/**
 * Parses a `traceparent` value; null when it is absent or invalid (then a new trace starts, as
 * the W3C recommendation says). Version ff, all-zero ids and extra fields on version 00 are invalid.
 */
export function parseTraceparent(value: string): ParentContext | null {
  const m = TRACEPARENT.exec(value.trim());
  if (m === null) return null;
  const [, version, traceId, spanId, flags, rest] = m;
  if (version === 'ff' || (version === '00' && rest !== undefined)) return null;
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return null;
  return { traceId, spanId, sampled: (parseInt(flags, 16) & 1) === 1 };
}

export function formatTraceparent(traceId: string, spanId: string, sampled: boolean): string {
  return `00-${traceId}-${spanId}-${sampled ? '01' : '00'}`;
}
