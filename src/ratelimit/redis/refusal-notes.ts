import type { RateLimitSpec, WindowUnit } from '../../config/resource-types.js';
import { NO_LIMIT, STATUS_ALLOWED, STATUS_REJECTED_INPUT, STATUS_REJECTED_OUTPUT } from '../decision-codec.js';
import type { LimitKey } from '../limit-key.js';
import { isShadow, type Decision, type LimitTerm } from '../limiter.js';
import { secondsUntil } from '../windows.js';
import { FIRST_STATUS, REPLY_IN_USED, REPLY_LEASES_OUT, REPLY_MS, REPLY_OUT_USED, REPLY_WINDOW, toDecision, type Batch } from './batch.js';
import { refusalFrom, refusalsFrom, type NoteDecisions } from '../note-decisions.js';
import { LEASE_VIEW_MS } from './leases.js';
import { MULTI_IN_USED, MULTI_LEASES_OUT, MULTI_MS, MULTI_OUT_USED, MULTI_WINDOW, PER_LIMIT, type MultiBatch } from './multi-batch.js';

/** A refusal note is used for at most this long after the reply it was read from (ms): a lease's view of the counts ages as long. */
export const NOTE_VIEW_MS = LEASE_VIEW_MS;

/** Past this many notes, a new one first drops those whose view is over (the notes of keys refused once and never again). */
const SWEEP_ABOVE = 64;

/** One limit's counts as a script's reply showed them when it refused an admission for good. */
interface RefusalNote {
  readonly unit: WindowUnit;
  /** The limits of the refusal (NO_LIMIT: none); a request under others (a config edit) goes to Redis. */
  readonly inLimit: number;
  readonly outLimit: number;
  /**
   * What requests had used of the window's input, every lease out counted as given back unused:
   * a request with more input tokens than the limit leaves past this is refused by input. Leases
   * coming back do not lower it; only give-backs and corrections do.
   */
  readonly input: number;
  readonly outUsed: number;
  /** The window's start (Redis's clock) and its end (this process's clock, ms). */
  readonly window: number;
  readonly endsAt: number;
  /** This process's clock (ms) when the reply came. */
  readonly seenAt: number;
}

/**
 * The refusal notes of one worker's global limit store, one per limit key at most (with leases
 * on: RATE_LIMIT_REDIS_LEASES; docs/rate-limiting.md, "Refusal notes" of the global limit). When a
 * script call refuses an admission for good (by input, when even every lease out given back would
 * not make it fit; or by output, the limit reached), its reply's counts become the key's note: for NOTE_VIEW_MS after
 * the reply (and never past the window's end), a request of that key under the same limits that
 * those counts refuse is refused here, in the script's order (input first, then output), without
 * a call. A request they do not refuse goes to Redis as before.
 *
 * The counts a note holds only fall by a give-back or a correction (a request that never reached
 * a pod, a pod's lower prompt count, a late reply undone): this worker drops the key's note when
 * it sends one (`forget`), so its own order holds; one from another worker or instance is seen
 * when the note's view ends, as a lease sees other workers' output. A request refused from a note
 * that a give-back elsewhere would have let in, within that view, is the slack of these notes.
 */
export class RedisRefusalNotes implements NoteDecisions {
  private readonly notes = new Map<LimitKey, RefusalNote>();

  constructor(private readonly now: () => number) {}

  /** Notes held. */
  get size(): number {
    return this.notes.size;
  }

  /** Reads a batch's reply: when it refused an admission for good, the counts after the call become the key's note. */
  fromReply(b: Batch, reply: readonly number[]): void {
    if (!refusedForGood(reply, FIRST_STATUS, b.admissions.length, 1)) return;
    const input = reply[REPLY_IN_USED] - reply[REPLY_LEASES_OUT] + b.admittedTokens(reply);
    this.take(b.key, b.unit, b.inLimit, b.outLimit, input, reply[REPLY_OUT_USED], reply[REPLY_WINDOW], reply[REPLY_MS]);
  }

  /**
   * The same for an admit-all reply (route and tenant): when an enforced limit refused one of its
   * admissions for good, each limit's counts become that limit's note (one that did not refuse
   * gives its figures to the next refusal).
   */
  fromMultiReply(b: MultiBatch, reply: readonly number[]): void {
    const n = b.terms.length;
    if (!refusedForGood(reply, n * PER_LIMIT, b.admissions.length * n, n)) return;
    const admitted = b.admittedTokens(reply);
    for (let j = 0; j < n; j++) {
      const at = j * PER_LIMIT;
      const limit = b.terms[j].limit;
      this.take(b.terms[j].key, limit.unit, limit.inputTokensPerUnit ?? NO_LIMIT, limit.outputTokensPerUnit ?? NO_LIMIT,
        reply[at + MULTI_IN_USED] - reply[at + MULTI_LEASES_OUT] + admitted, reply[at + MULTI_OUT_USED], reply[at + MULTI_WINDOW], reply[at + MULTI_MS]);
    }
  }

  private take(key: LimitKey, unit: WindowUnit, inLimit: number, outLimit: number, input: number, outUsed: number, window: number, msLeft: number): void {
    const now = this.now();
    if (this.notes.size >= SWEEP_ABOVE && !this.notes.has(key)) this.sweep(now);
    this.notes.set(key, { unit, inLimit, outLimit, input, outUsed, window, endsAt: now + msLeft, seenAt: now });
  }

  /** The refusal when the key's note refuses a request of `tokens` under `limit` now, else null. */
  refuse(key: LimitKey, limit: RateLimitSpec, tokens: number): Decision | null {
    return refusalFrom(this, key, limit, tokens, this.now());
  }

  /**
   * The decisions of a multi-limit admission (route and tenant) when every one of its limits has a
   * note and one of them refuses it: each limit's decision from its note (a limit that does not
   * refuse as fitting, with its figures), as the script's reply would give them; else null. A
   * shadow limit is never decided from a note (valid): its verdicts are each the script's.
   */
  refuseAll(terms: readonly LimitTerm[], tokens: number): Decision[] | null {
    return refusalsFrom(this, terms, tokens, this.now());
  }

  /** The key's note's decision for a request of `tokens` under `limit` (NoteDecisions), as a reply with its counts gives it; null without a valid note. */
  decide(key: LimitKey, limit: RateLimitSpec, tokens: number, now: number): Decision | null {
    const n = this.valid(key, limit, now);
    return n === null ? null : toDecision(status(n, tokens), n.input, n.outUsed, secondsUntil(n.endsAt, now), limit, n.window);
  }

  /** Drops the key's note: this worker is sending what may lower the key's counts. */
  forget(key: LimitKey): void {
    this.notes.delete(key);
  }

  /** Drops every note (the store went down: the Redis that answers next may hold other counts). */
  clear(): void {
    this.notes.clear();
  }

  /** The key's note when its view is on and it was made under `limit`, else null (a void one is dropped). */
  private valid(key: LimitKey, limit: RateLimitSpec, now: number): RefusalNote | null {
    const n = this.notes.get(key);
    if (n === undefined) return null;
    if (!viewOn(n, now) || isShadow(limit) || n.unit !== limit.unit
      || n.inLimit !== (limit.inputTokensPerUnit ?? NO_LIMIT) || n.outLimit !== (limit.outputTokensPerUnit ?? NO_LIMIT)) {
      this.notes.delete(key);
      return null;
    }
    return n;
  }

  private sweep(now: number): void {
    for (const [key, n] of this.notes) if (!viewOn(n, now)) this.notes.delete(key);
  }
}

/** Whether statuses `from`..`from + count` (`perAdmission` per admission) hold a refusal for good: by input or by output, not "recalling". */
function refusedForGood(reply: readonly number[], from: number, count: number, perAdmission: number): boolean {
  for (let i = from; i < from + count; i += perAdmission) {
    for (let j = 0; j < perAdmission; j++) {
      const s = reply[i + j];
      if (s === STATUS_REJECTED_INPUT || s === STATUS_REJECTED_OUTPUT) return true;
    }
  }
  return false;
}

function viewOn(n: RefusalNote, now: number): boolean {
  return now < n.endsAt && now - n.seenAt <= NOTE_VIEW_MS;
}

/** The scripts' admission rule on the note's counts: input first, then output. */
function status(n: RefusalNote, tokens: number): number {
  if (n.inLimit !== NO_LIMIT && n.input + tokens > n.inLimit) return STATUS_REJECTED_INPUT;
  if (n.outLimit !== NO_LIMIT && n.outUsed >= n.outLimit) return STATUS_REJECTED_OUTPUT;
  return STATUS_ALLOWED;
}
