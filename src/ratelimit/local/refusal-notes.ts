import type { LimitKey } from '../limit-key.js';
import type { RateLimitSpec, WindowUnit } from '../../config/resource-types.js';
import { isShadow, type Decision, type LimitTerm } from '../limiter.js';
import { secondsUntil, windowOver } from '../windows.js';
import { refusalFrom, refusalsFrom, type NoteDecisions } from '../note-decisions.js';

/** A refusal note as a worker holds it (lease-book.ts, "Refusal notes"). */
interface RefusalNote {
  readonly id: number;
  readonly unit: WindowUnit;
  /** The limits the refusal was made under; a request with other limits (a config edit) asks the primary. */
  readonly inLimit: number | null;
  readonly outLimit: number | null;
  /** Window end, epoch ms: the note is void from then on. */
  readonly end: number;
  /**
   * The window's input count with every lease given back unused: a request with more input tokens
   * than the limit minus this is refused by input. The primary recalls the note before this can fall.
   */
  readonly input: number;
  /** The output limit was reached: every request is refused until the window ends (output only grows). */
  readonly outputReached: boolean;
  /** The header figures: the limits minus what requests have used, as the primary last told. */
  inRemaining: number;
  outRemaining: number;
}

/**
 * The refusal notes one worker holds, one per key at most. When the primary refuses a worker's
 * request for good (no budget sits in a lease that could make it fit), its answer carries a note:
 * the window's input count with every lease given back, whether the output limit is reached, and
 * the window's end. Until the window ends, a request the note refuses (more input tokens than the
 * limit leaves past that count, or any request once the output limit is reached) is refused here,
 * without a message: the primary would refuse it too, since it recalls the note (MSG_RECALL, the
 * notes share the leases' ids) as soon as that count falls below what the note was made with. A request the note does not refuse
 * asks the primary as before. A multi-limit admission (route and tenant) is refused here when
 * every one of its limits has a note and one refuses it (the primary notes every limit of such a
 * refusal).
 */
export class RefusalNotes implements NoteDecisions {
  private readonly notes = new Map<string, RefusalNote>();

  /** Notes held (tests). */
  get size(): number {
    return this.notes.size;
  }

  /**
   * Takes the note of a refusal under these limits: `r` holds the encoded decision at `at`
   * (decision-codec.ts) followed by [noteId, input, outputReached, windowEnd] at `noteAt`; it
   * replaces any note of the key.
   */
  take(key: LimitKey, inLimit: number | null, outLimit: number | null, unit: WindowUnit, r: readonly number[], at: number, noteAt: number): void {
    this.notes.set(key, {
      id: r[noteAt], unit, inLimit, outLimit, end: r[noteAt + 3], input: r[noteAt + 1], outputReached: r[noteAt + 2] === 1,
      inRemaining: r[at + 3], outRemaining: r[at + 6],
    });
  }

  /** The refusal when the key's note refuses `tokens` under these limits at `now`, else null. */
  refuse(key: LimitKey, limit: RateLimitSpec, tokens: number, now: number): Decision | null {
    return refusalFrom(this, key, limit, tokens, now);
  }

  /**
   * The decisions of a multi-limit admission (route and tenant) when every one of its limits has
   * a note here and one of them refuses it: each limit's decision as the primary's refusal gives
   * it (the others' as fitting, with their figures); else null (the primary decides). Never with
   * a shadow limit (the primary counts its verdicts).
   */
  refuseAll(terms: readonly LimitTerm[], tokens: number, now: number): Decision[] | null {
    return refusalsFrom(this, terms, tokens, now);
  }

  /** The key's note's decision for a request of `tokens` under `limit` (NoteDecisions); null without a valid note, or for a shadow limit. */
  decide(key: LimitKey, limit: RateLimitSpec, tokens: number, now: number): Decision | null {
    if (isShadow(limit)) return null;
    const n = this.valid(key, limit, now);
    return n === null ? null : decision(n, tokens, now);
  }

  /** The key's note when it was made under these limits and its window is on, else null (a void one is dropped). */
  private valid(key: LimitKey, limit: RateLimitSpec, now: number): RefusalNote | null {
    const n = this.notes.get(key);
    if (n === undefined) return null;
    if (windowOver(n.unit, n.end, now) || n.unit !== limit.unit || n.inLimit !== limit.inputTokensPerUnit || n.outLimit !== limit.outputTokensPerUnit) {
      this.notes.delete(key);
      return null;
    }
    return n;
  }

  /** Drops the key's note: this worker is sending what may lower the key's count (its own order holds). */
  forget(key: LimitKey): void {
    this.notes.delete(key);
  }

  /** What every worker has used of the window of note `id` (MSG_USAGE, shared with leases: other ids are not notes). */
  usage(id: number, inUsed: number, outUsed: number): void {
    for (const n of this.notes.values()) {
      if (n.id !== id) continue;
      if (n.inLimit !== null) n.inRemaining = n.inLimit > inUsed ? n.inLimit - inUsed : 0;
      if (n.outLimit !== null) n.outRemaining = n.outLimit > outUsed ? n.outLimit - outUsed : 0;
      return;
    }
  }

  /** The primary recalls these notes (ids it may also have sent for leases). */
  recall(ids: readonly number[]): void {
    for (const [key, n] of this.notes) if (ids.includes(n.id)) this.notes.delete(key);
  }

  clear(): void {
    this.notes.clear();
  }
}

/** The note's decision for a request of `tokens`, in the primary's order: input first, then output. */
function decision(n: RefusalNote, tokens: number, now: number): Decision {
  const byInput = n.inLimit !== null && n.input + tokens > n.inLimit;
  const reset = secondsUntil(n.end, now);
  return {
    allowed: !byInput && !n.outputReached,
    rejectedBy: byInput ? 'input' : n.outputReached ? 'output' : null,
    retryAfterSeconds: reset,
    input: n.inLimit === null ? null : { limit: n.inLimit, remaining: n.inRemaining, resetSeconds: reset },
    output: n.outLimit === null ? null : { limit: n.outLimit, remaining: n.outRemaining, resetSeconds: reset },
  };
}
