import type { WindowUnit } from '../../config/resource-types.js';
import { windowEnd, windowStart } from '../windows.js';

/** Most limits (key, unit and window) whose give-backs are held at once; one more is dropped (and counted). */
export const MAX_HELD_GIVE_BACKS = 10_000;

/** Input tokens to give back to one limit's window, once the Redis instance that charged them answers again. */
export interface HeldGiveBack {
  /** The key base `ir:{<limit key>}` (key-base.ts). */
  readonly base: string;
  readonly unit: WindowUnit;
  /** Start of the window they were charged in, ms. */
  readonly window: number;
  /** On a Redis Cluster, the window's incarnation they were charged under (incarnations.ts), else ''. */
  readonly incarnation: string;
  /**
   * The window they were charged in by the script's clock (their admissions' Decision.window; the
   * script applies them only in that window), or -1: not known (then `window`, this process's, decides).
   */
  readonly charged: number;
  tokens: number;
}

/**
 * Give-backs (negative input corrections) of requests that Redis charged, made while it was
 * unavailable and sent in no call (the circuit open): held here, summed per limit and window, and
 * given back when Redis answers again, only if it is the instance that charged them (`run_id`,
 * read at each connection: one that restarted, or a failover, lost those charges, and a give-back
 * would take others' off) and their window still has more than `marginMs` left (a give-back must
 * not reach the next window). On a Redis Cluster no instance is read (one name stands for all the
 * nodes): each give-back keeps the incarnation of its window instead, which the script checks.
 * Only the failure paths touch it.
 */
export class HeldGiveBacks {
  private held = new Map<string, HeldGiveBack>();
  /** The instance the held give-backs belong to (the last one that answered), or null: none known. */
  private instance: string | null = null;
  /** Give-backs dropped (tokens): too many held, window over, another instance. */
  private droppedTokens = 0;

  /** The instance that answered last (INFO's `run_id`), or null when it could not be read. */
  get runId(): string | null {
    return this.instance;
  }

  /**
   * Holds `tokens` (> 0) to give back to `base`'s window of `unit` at `nowMs` (on a Cluster, to its
   * `incarnation`; `charged`: the window they were charged in by the script's clock, -1 not known).
   * False when not held: the instance that charged them is unknown, or too many limits are held already.
   */
  hold(base: string, unit: WindowUnit, nowMs: number, tokens: number, incarnation = '', charged = -1): boolean {
    if (this.instance === null) return false;
    const window = windowStart(unit, nowMs);
    const id = `${base}\0${unit}\0${window}\0${incarnation}\0${charged}`;
    const h = this.held.get(id);
    if (h !== undefined) {
      h.tokens += tokens;
      return true;
    }
    if (this.held.size >= MAX_HELD_GIVE_BACKS) {
      this.droppedTokens += tokens;
      return false;
    }
    this.held.set(id, { base, unit, window, incarnation, charged, tokens });
    return true;
  }

  /**
   * Redis answers again as `runId` (null: unknown) at `nowMs`: the held give-backs to send (those
   * of that same instance whose window is still on, with more than `marginMs` left, or, when the
   * window they were charged in is known, `charged`, which the script checks by its clock); the
   * others are dropped. From now on, give-backs are held for `runId`.
   */
  takeFor(runId: string | null, nowMs: number, marginMs: number): HeldGiveBack[] {
    const same = runId !== null && runId === this.instance;
    this.instance = runId;
    if (this.held.size === 0) return NONE;
    const out: HeldGiveBack[] = [];
    for (const h of this.held.values()) {
      if (same && (h.charged >= 0 || (h.window === windowStart(h.unit, nowMs) && windowEnd(h.unit, nowMs) - nowMs > marginMs))) out.push(h);
      else this.droppedTokens += h.tokens;
    }
    this.held = new Map();
    return out;
  }

  /** Tokens dropped since the last call (reset). */
  takeDropped(): number {
    const n = this.droppedTokens;
    this.droppedTokens = 0;
    return n;
  }
}

const NONE: HeldGiveBack[] = [];

/** The `run_id` of an INFO reply (the Redis process: a restart changes it), or null. */
export function runIdOf(info: string): string | null {
  const m = /run_id:([0-9a-f]+)/.exec(info);
  return m === null ? null : m[1];
}
