import type { RateLimitSpec, WindowUnit } from '../../config/resource-types.js';
import { NO_LIMIT } from '../decision-codec.js';
import type { LimitKey } from '../limit-key.js';
import { isShadow, type Decision, type LimitTerm } from '../limiter.js';
import { secondsUntil } from '../windows.js';
import { REPLY_IN_USED, REPLY_LEASE, REPLY_LEASES_OUT, REPLY_MS, REPLY_OUT_USED, REPLY_RECALL, REPLY_WINDOW, type Batch } from './batch.js';
import type { LeaseSlot } from './multi-batch.js';

/** Input tokens a worker asks for at least when it takes a lease (the script lends at most 1/16 of what is free). */
export const LEASE_ASK_MIN = 4096;
/** ...and at least this many times the tokens of the request that asks. */
export const LEASE_ASK_REQUESTS = 64;
/** A lease decides from the counts of the reply that last brought them for at most this long (ms). */
export const LEASE_VIEW_MS = 50;
/** A lease no request used for this long (ms) goes back. */
export const LEASE_IDLE_MS = 100;

/** What happened to a lease, for metrics: lent by Redis, its unused tokens given back, recalled by a refusal, forfeited (held when the connection was lost, or given back while the store was down and not taken: its tokens stay counted). */
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

/** Adds a lease given back to a batch's slot of its key (a lease of another window replaces an older one's: that window is over). */
export function giveBackInto(b: LeaseSlot, r: LeaseReturn): void {
  if (b.backLent > 0 && b.backWindow === r.window) {
    b.back += r.tokens;
    b.backLent += r.lent;
  } else if (b.backLent === 0 || r.window > b.backWindow) {
    b.back = r.tokens;
    b.backLent = r.lent;
    b.backWindow = r.window;
  }
}

/** One limit's counts as a script's reply shows them, after its call (a lease lent in it included). */
export interface LimitCounts {
  readonly inUsed: number;
  readonly outUsed: number;
  /** The lease lent in the call (0 = none). */
  readonly lent: number;
  /** The window's start (epoch ms of the Redis clock). */
  readonly window: number;
  readonly recall: boolean;
  /** The size of the leases out before the call's lease. */
  readonly leasesOut: number;
  readonly msLeft: number;
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
    const now = this.now();
    const l = this.covering(key, limit, inputTokens, now);
    return l === null ? null : admitFrom(l, inputTokens, now);
  }

  /**
   * The decisions of a multi-limit admission (route and tenant) when every one of its limits has a
   * lease here that covers the request (each then admits it: all or none), else null. Shadow
   * limits and limits without an input limit are never leased.
   */
  admitAll(terms: readonly LimitTerm[], inputTokens: number): Decision[] | null {
    const now = this.now();
    for (const t of terms) if (this.covering(t.key, t.limit, inputTokens, now) === null) return null;
    const out: Decision[] = [];
    for (const t of terms) out.push(admitFrom(this.held.get(t.key)!, inputTokens, now));
    return out;
  }

  /** Whether the key's lease covers a request of `inputTokens` under these limits now. */
  covers(key: LimitKey, limit: RateLimitSpec, inputTokens: number): boolean {
    return this.covering(key, limit, inputTokens, this.now()) !== null;
  }

  private covering(key: LimitKey, limit: RateLimitSpec, inputTokens: number, now: number): Lease | null {
    const l = this.held.get(key);
    if (l === undefined || inputTokens > l.left || isShadow(limit) || !usable(l, limit, now)) return null;
    return l;
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
    const inUsed = reply[REPLY_IN_USED] + b.admittedTokens(reply);
    return this.fromCounts(key, b.admissions[0]?.limit ?? null, b.unit, {
      inUsed: inUsed + reply[REPLY_LEASE], outUsed: reply[REPLY_OUT_USED], lent: reply[REPLY_LEASE], window: reply[REPLY_WINDOW],
      recall: reply[REPLY_RECALL] === 1, leasesOut: reply[REPLY_LEASES_OUT], msLeft: reply[REPLY_MS],
    });
  }

  /**
   * The same for one limit of a reply (a batch's, or one limit of the admit-all script's):
   * `limit` is the limits a lease lent in it is for (null: none asked, the reply only refreshes).
   */
  fromCounts(key: LimitKey, limit: RateLimitSpec | null, unit: WindowUnit, c: LimitCounts): LeaseReturn | null {
    const now = this.now();
    const held = this.held.get(key);
    if (held !== undefined && held.unit === unit && held.window === c.window) {
      held.inUsed = c.inUsed;
      held.outUsed = c.outUsed;
      held.othersOut = Math.max(0, c.leasesOut - held.size); // the held lease is among those out
      held.seenAt = now;
      if (c.recall) {
        if (this.onEvent !== null) this.onEvent('recalled');
        return this.takeBack(key); // a recall lends nothing
      }
    }
    if (c.lent <= 0 || limit === null) return null;
    // Lent all the same (counted, as its give-back is): one is held already, so it goes back at once.
    if (this.onEvent !== null) this.onEvent('lent');
    if (held !== undefined) return { key, limit, tokens: c.lent, window: c.window, lent: c.lent };
    this.held.set(key, {
      limit, unit, inLimit: limit.inputTokensPerUnit ?? NO_LIMIT, outLimit: limit.outputTokensPerUnit ?? NO_LIMIT, window: c.window,
      endsAt: now + c.msLeft, size: c.lent, left: c.lent, inUsed: c.inUsed, outUsed: c.outUsed, othersOut: c.leasesOut, seenAt: now, usedAt: now,
    });
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
}

/** Admits `inputTokens` from a lease that covers them. */
function admitFrom(l: Lease, inputTokens: number, now: number): Decision {
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
    window: l.window, // the lease's tokens were charged to the window it was lent in
  };
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
