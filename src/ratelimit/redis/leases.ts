import type { RateLimitSpec, WindowUnit } from '../../config/resource-types.js';
import { NO_LIMIT, STATUS_ALLOWED } from '../decision-codec.js';
import type { LimitKey } from '../limit-key.js';
import type { Decision } from '../limiter.js';
import { secondsUntil } from '../windows.js';
import { FIRST_STATUS, REPLY_IN_USED, REPLY_LEASE, REPLY_LEASES_OUT, REPLY_MS, REPLY_OUT_USED, REPLY_RECALL, REPLY_WINDOW, type Batch } from './batch.js';

/** Input tokens a worker asks for at least when it takes a lease (the script lends at most 1/16 of what is free). */
export const LEASE_ASK_MIN = 4096;
/** ...and at least this many times the tokens of the request that asks. */
export const LEASE_ASK_REQUESTS = 64;
/** A lease decides from the counts of the reply that last brought them for at most this long (ms). */
export const LEASE_VIEW_MS = 50;
/** A lease no request used for this long (ms) goes back. */
export const LEASE_IDLE_MS = 100;

/** What happened to a lease, for metrics: lent by Redis, its unused tokens given back, recalled by a refusal, forfeited (the store went down while it was held). */
export type LeaseEvent = 'lent' | 'given_back' | 'recalled' | 'forfeited';

/**
 * Unused tokens of a lease to give back, with the window start it was lent in (the script applies
 * them only in that window) and its size when lent (the script's count of leases out goes down by it).
 */
export interface LeaseReturn {
  readonly key: LimitKey;
  readonly limit: RateLimitSpec;
  readonly tokens: number;
  readonly window: number;
  readonly lent: number;
}

/** A slice of a window's input budget lent by Redis to this worker, already counted there. */
interface Lease {
  readonly limit: RateLimitSpec;
  readonly unit: WindowUnit;
  readonly inLimit: number;
  readonly outLimit: number;
  /** Start of the window it was lent in (epoch ms of the Redis clock, as the script reports it). */
  readonly window: number;
  /** Local time (ms) at which that window ends. */
  readonly endsAt: number;
  /** Input tokens lent. */
  readonly size: number;
  /** Input tokens not admitted yet. */
  left: number;
  /** The counters as the last reply of this key showed them (input includes every lease lent). */
  inUsed: number;
  outUsed: number;
  /** The size of the other workers' leases out, as that reply showed it (headers count them as unused). */
  othersOut: number;
  /** Local time of that reply. */
  seenAt: number;
  /** Local time of the last admission from it. */
  usedAt: number;
}

/**
 * The leases of one global limit store in one worker (RATE_LIMIT_REDIS_LEASES,
 * docs/rate-limiting.md#leases-of-the-global-limit): at most one per limit key. A request whose
 * input tokens fit in the key's lease is admitted here, without a Redis call, while the output
 * count last seen (at most LEASE_VIEW_MS old) is below the output limit. Its tokens were counted
 * in Redis when the lease was lent, so the input limit is never exceeded; what a lease does not
 * use goes back (LeaseReturn) when a request does not fit, when it is recalled, idle, or its view
 * is too old, and when the store closes. Time is local (`now`), windows are Redis's.
 */
export class RedisLeases {
  private readonly held = new Map<LimitKey, Lease>();

  constructor(private readonly now: () => number, private readonly onEvent: ((event: LeaseEvent) => void) | null = null) {}

  /** Leases held. */
  get size(): number {
    return this.held.size;
  }

  /** What a request asks for when it takes a lease. */
  static ask(inputTokens: number): number {
    return Math.max(LEASE_ASK_MIN, LEASE_ASK_REQUESTS * inputTokens);
  }

  /** The decision when the key's lease covers the request under these limits, else null. */
  admit(key: LimitKey, limit: RateLimitSpec, inputTokens: number): Decision | null {
    const l = this.held.get(key);
    if (l === undefined || inputTokens > l.left) return null;
    const now = this.now();
    if (!usable(l, limit, now)) return null;
    l.left -= inputTokens;
    l.usedAt = now;
    const reset = secondsUntil(l.endsAt, now);
    const inUsed = l.inUsed - l.left - l.othersOut; // what requests used, as far as this worker knows it
    return {
      allowed: true,
      rejectedBy: null,
      retryAfterSeconds: reset,
      input: { limit: l.inLimit, remaining: l.inLimit > inUsed ? l.inLimit - inUsed : 0, resetSeconds: reset },
      output: l.outLimit === NO_LIMIT ? null : { limit: l.outLimit, remaining: l.outLimit - l.outUsed, resetSeconds: reset },
    };
  }

  /** Takes the key's lease out; what it did not use, unless its window is over (null then, or without one). */
  takeBack(key: LimitKey): LeaseReturn | null {
    const l = this.held.get(key);
    if (l === undefined) return null;
    this.held.delete(key);
    return this.now() < l.endsAt ? { key, limit: l.limit, tokens: l.left, window: l.window, lent: l.size } : null;
  }

  /**
   * Reads the reply to a batch of the key: the counts it shows refresh the key's lease (same
   * window); its recall flag recalls the lease, which is taken out and returned, to be given back
   * at once; a lease lent in it is taken — or, when one is held already, returned to be given back.
   */
  fromReply(key: LimitKey, b: Batch, reply: readonly number[]): LeaseReturn | null {
    const now = this.now();
    let inUsed = reply[REPLY_IN_USED];
    for (let i = 0; i < b.tokens.length; i++) if (reply[FIRST_STATUS + i] === STATUS_ALLOWED) inUsed += b.tokens[i];
    const lent = reply[REPLY_LEASE];
    inUsed += lent;
    const window = reply[REPLY_WINDOW];
    const held = this.held.get(key);
    if (held !== undefined && held.unit === b.unit && held.window === window) {
      held.inUsed = inUsed;
      held.outUsed = reply[REPLY_OUT_USED];
      held.othersOut = Math.max(0, reply[REPLY_LEASES_OUT] - held.size); // the held lease is among those out
      held.seenAt = now;
      if (reply[REPLY_RECALL] === 1) {
        if (this.onEvent !== null) this.onEvent('recalled');
        return this.takeBack(key); // a recall lends nothing
      }
    }
    if (lent <= 0) return null;
    const limit = b.admissions[0].limit;
    if (held !== undefined) return { key, limit, tokens: lent, window, lent };
    this.held.set(key, {
      limit, unit: b.unit, inLimit: b.inLimit, outLimit: b.outLimit, window, endsAt: now + reply[REPLY_MS],
      size: lent, left: lent, inUsed, outUsed: reply[REPLY_OUT_USED], othersOut: reply[REPLY_LEASES_OUT], seenAt: now, usedAt: now,
    });
    if (this.onEvent !== null) this.onEvent('lent');
    return null;
  }

  /** Takes out the leases that should go back now (idle, view too old, window over) and returns what they did not use. */
  due(): LeaseReturn[] {
    const now = this.now();
    const back: LeaseReturn[] = [];
    for (const [key, l] of this.held) {
      if (fresh(l, now) && now - l.usedAt < LEASE_IDLE_MS) continue;
      const r = this.takeBack(key);
      if (r !== null) back.push(r);
    }
    return back;
  }

  /** Takes every lease out; returns what they did not use. */
  takeAll(): LeaseReturn[] {
    const back: LeaseReturn[] = [];
    for (const key of [...this.held.keys()]) {
      const r = this.takeBack(key);
      if (r !== null) back.push(r);
    }
    return back;
  }

  /** Drops every lease without giving anything back (the store is unreachable: their tokens stay counted). */
  forfeitAll(): void {
    if (this.onEvent !== null) for (let i = 0; i < this.held.size; i++) this.onEvent('forfeited');
    this.held.clear();
  }
}

/** Its window not over, its view of the counts not older than LEASE_VIEW_MS. */
function fresh(l: Lease, now: number): boolean {
  return now < l.endsAt && now - l.seenAt <= LEASE_VIEW_MS;
}

function usable(l: Lease, limit: RateLimitSpec, now: number): boolean {
  return fresh(l, now) && l.unit === limit.unit
    && l.inLimit === (limit.inputTokensPerUnit ?? NO_LIMIT) && l.outLimit === (limit.outputTokensPerUnit ?? NO_LIMIT)
    && (l.outLimit === NO_LIMIT || l.outUsed < l.outLimit);
}
