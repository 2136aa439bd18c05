import type { LimitKey } from '../limit-key.js';
import type { RateLimitSpec, WindowUnit } from '../../config/resource-types.js';
import { NO_LIMIT } from '../decision-codec.js';
import { OP_ADJUST_INPUT, OP_CHARGE_OUTPUT, OP_RETURN_LEASE } from './ipc-protocol.js';
import type { Clock } from '../../clock.js';
import type { Decision } from '../limiter.js';
import { secondsUntil } from '../windows.js';

/** Queues one op for the primary: [op, id, key, NO_LIMIT, NO_LIMIT, unit, amount]. */
export type LeaseOpSink = (op: number, id: number, key: LimitKey, unit: WindowUnit, amount: number) => void;

/** A lease granted by the primary (lease-book.ts), as the worker holds it. */
interface HeldLease {
  readonly id: number;
  readonly key: LimitKey;
  readonly unit: WindowUnit;
  /** The limits it was granted under; a request with other limits (a config edit) gives it back. */
  readonly inLimit: number | null;
  readonly outLimit: number | null;
  /** Window end, epoch ms: the lease is void from then on. */
  readonly end: number;
  /** Input tokens it holds; NO_LIMIT without an input limit (nothing was charged up front). */
  readonly inGranted: number;
  /** Output tokens it may charge unreported; NO_LIMIT without an output limit. */
  readonly outGranted: number;
  /** Remaining input / output after the decision that granted it (header values start there). */
  readonly inBase: number;
  readonly outBase: number;
  /** Input admitted or corrected against it; output charged against it. */
  inUsed: number;
  outUsed: number;
  /** Not yet reported to the primary: output always; input only without an input limit. */
  inUnreported: number;
  outUnreported: number;
}

/** How often (ms) usage held in leases is reported to the primary. */
const REPORT_INTERVAL_MS = 50;

/**
 * The leases one worker holds, one per key at most. A request whose tokens fit in the key's
 * lease, while the output charged against the lease stays below its allowance, is admitted here
 * without a message; anything else gives the lease back and asks the primary. Output charges
 * and input corrections are absorbed by the lease and reported every REPORT_INTERVAL_MS and when
 * the lease goes back. A lease of an ended window is dropped with what it had not reported:
 * that window's counters are gone.
 */
export class HeldLeases {
  private readonly leases = new Map<string, HeldLease>();
  private readonly send: LeaseOpSink;
  private readonly clock: Clock;
  private timer: NodeJS.Timeout | null = null;
  private readonly reportNow = (): void => this.report();

  constructor(send: LeaseOpSink, clock: Clock) {
    this.send = send;
    this.clock = clock;
  }

  /** Leases held (tests and metrics). */
  get size(): number {
    return this.leases.size;
  }

  /**
   * Takes the lease granted in a reply to an admission under these limits: `r` holds the encoded
   * decision at `at` (decision-codec.ts) followed by [leaseId, input, output, windowEnd]. Returns
   * false (and gives it straight back) when a lease of the key is already held.
   */
  take(key: LimitKey, inLimit: number | null, outLimit: number | null, unit: WindowUnit, r: readonly number[], at: number, leaseAt: number): boolean {
    if (this.leases.has(key)) {
      this.giveBack(key, unit, r, leaseAt);
      return false;
    }
    this.leases.set(key, {
      id: r[leaseAt], key, unit, inLimit, outLimit,
      end: r[leaseAt + 3], inGranted: r[leaseAt + 1], outGranted: r[leaseAt + 2],
      inBase: r[at + 3], outBase: r[at + 6],
      inUsed: 0, outUsed: 0, inUnreported: 0, outUnreported: 0,
    });
    return true;
  }

  /** Gives back, unused, the lease granted in a reply that is not kept (`r` as in take()). */
  giveBack(key: LimitKey, unit: WindowUnit, r: readonly number[], leaseAt: number): void {
    const input = r[leaseAt + 1];
    this.send(OP_RETURN_LEASE, r[leaseAt], key, unit, input === NO_LIMIT ? 0 : input);
  }

  /** The decision when the lease covers the request, else null (the lease, if any, has gone back). */
  admit(key: LimitKey, limit: RateLimitSpec, tokens: number): Decision | null {
    const l = this.leases.get(key);
    if (l === undefined) return null;
    const now = this.clock();
    if (now >= l.end) {
      this.leases.delete(key);
      return null;
    }
    if (l.unit !== limit.unit || l.inLimit !== limit.inputTokensPerUnit || l.outLimit !== limit.outputTokensPerUnit
      || (l.inGranted !== NO_LIMIT && l.inUsed + tokens > l.inGranted)
      || (l.outGranted !== NO_LIMIT && l.outUsed >= l.outGranted)) {
      this.release(l);
      return null;
    }
    l.inUsed += tokens;
    if (l.inGranted === NO_LIMIT && tokens > 0) this.unreported(l, tokens, 0);
    const reset = secondsUntil(l.end, now);
    return {
      allowed: true,
      rejectedBy: null,
      retryAfterSeconds: reset,
      input: l.inLimit === null ? null : { limit: l.inLimit, remaining: positive(l.inBase - l.inUsed), resetSeconds: reset },
      output: l.outLimit === null ? null : { limit: l.outLimit, remaining: positive(l.outBase - l.outUsed), resetSeconds: reset },
    };
  }

  /** Counts output against the key's lease; false when no lease of this unit is held (send it). */
  charge(key: LimitKey, unit: WindowUnit, tokens: number): boolean {
    const l = this.live(key, unit);
    if (l === null) return false;
    l.outUsed += tokens;
    this.unreported(l, 0, tokens);
    // Past its allowance the lease may not admit, and the primary must see the overshoot now.
    if (l.outGranted !== NO_LIMIT && l.outUsed >= l.outGranted) this.release(l);
    return true;
  }

  /** Absorbs an input correction in the key's lease; false when no lease of this unit is held. */
  adjust(key: LimitKey, unit: WindowUnit, delta: number): boolean {
    const l = this.live(key, unit);
    if (l === null) return false;
    l.inUsed += delta;
    if (l.inGranted === NO_LIMIT) this.unreported(l, delta, 0);
    else if (l.inUsed > l.inGranted) this.release(l);
    return true;
  }

  /** The primary wants these leases back. */
  recall(ids: readonly number[]): void {
    for (const l of this.leases.values()) if (ids.includes(l.id)) this.release(l);
  }

  /** Gives every lease back (closing). */
  releaseAll(): void {
    for (const l of this.leases.values()) this.release(l);
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
  }

  private live(key: LimitKey, unit: WindowUnit): HeldLease | null {
    const l = this.leases.get(key);
    if (l === undefined || l.unit !== unit) return null;
    if (this.clock() >= l.end) {
      this.leases.delete(key);
      return null;
    }
    return l;
  }

  private release(l: HeldLease): void {
    this.leases.delete(l.key);
    this.sendUnreported(l);
    this.send(OP_RETURN_LEASE, l.id, l.key, l.unit, l.inGranted === NO_LIMIT ? 0 : l.inGranted - l.inUsed);
  }

  private sendUnreported(l: HeldLease): void {
    // The charge names the lease, so the primary counts it against the lease's allowance.
    if (l.outUnreported > 0) this.send(OP_CHARGE_OUTPUT, l.id, l.key, l.unit, l.outUnreported);
    if (l.inUnreported !== 0) this.send(OP_ADJUST_INPUT, l.id, l.key, l.unit, l.inUnreported);
    l.outUnreported = 0;
    l.inUnreported = 0;
  }

  private unreported(l: HeldLease, input: number, output: number): void {
    l.inUnreported += input;
    l.outUnreported += output;
    if (this.timer === null) {
      this.timer = setTimeout(this.reportNow, REPORT_INTERVAL_MS);
      this.timer.unref();
    }
  }

  private report(): void {
    this.timer = null;
    const now = this.clock();
    for (const l of this.leases.values()) {
      if (now >= l.end) this.leases.delete(l.key);
      else this.sendUnreported(l);
    }
  }
}

function positive(n: number): number {
  return n > 0 ? n : 0;
}
