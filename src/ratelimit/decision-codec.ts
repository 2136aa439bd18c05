import type { Decision, LimitState } from './limiter.js';

/**
 * A Decision as DECISION_STRIDE numbers, so the local store can answer without allocating
 * and the IPC host/client can ship decisions as one flat JSON array:
 *   [status, retryAfterSeconds, inLimit, inRemaining, inReset, outLimit, outRemaining, outReset]
 * status: STATUS_ALLOWED | STATUS_REJECTED_INPUT | STATUS_REJECTED_OUTPUT.
 * A limit of NO_LIMIT (-1) means that direction has no limit (LimitState null).
 */
export const DECISION_STRIDE = 8;
export const STATUS_ALLOWED = 0;
export const STATUS_REJECTED_INPUT = 1;
export const STATUS_REJECTED_OUTPUT = 2;
export const NO_LIMIT = -1;

/** Builds the Decision encoded at `arr[offset .. offset + DECISION_STRIDE)`. */
export function decodeDecision(arr: readonly number[], offset: number): Decision {
  const status = arr[offset];
  if (status !== STATUS_ALLOWED && status !== STATUS_REJECTED_INPUT && status !== STATUS_REJECTED_OUTPUT) {
    throw new Error(`invalid encoded rate limit decision status ${String(status)} at offset ${offset}`);
  }
  return {
    allowed: status === STATUS_ALLOWED,
    rejectedBy: status === STATUS_REJECTED_INPUT ? 'input' : status === STATUS_REJECTED_OUTPUT ? 'output' : null,
    retryAfterSeconds: arr[offset + 1],
    input: decodeState(arr, offset + 2),
    output: decodeState(arr, offset + 5),
  };
}

function decodeState(arr: readonly number[], at: number): LimitState | null {
  const limit = arr[at];
  if (limit === NO_LIMIT) return null;
  return { limit, remaining: arr[at + 1], resetSeconds: arr[at + 2] };
}
