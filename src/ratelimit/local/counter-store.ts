import type { LimitKey } from '../limit-key.js';
import type { RateLimitSpec, WindowUnit } from '../../config/resource-types.js';
import { DECISION_STRIDE, decodeDecision, NO_LIMIT, STATUS_ALLOWED, STATUS_REJECTED_INPUT, STATUS_REJECTED_OUTPUT } from '../decision-codec.js';
import { systemClock, type Clock } from '../../clock.js';
import { isShadow, type Decision, type LimitTerm, type TokenLimiter } from '../limiter.js';
import { secondsUntil, windowEnd, windowStart } from '../windows.js';
import { checkTokenCount, checkTokenDelta } from '../token-amounts.js';

/** The counts of a key's window it left but may come back to (a unit changed, a clock stepped back), kept until that window ends. */
interface KeptWindow {
  readonly unit: WindowUnit;
  readonly start: number;
  readonly end: number;
  readonly input: number;
  readonly output: number;
}

/**
 * Counters of one key in its current window. When the key's unit changes, the window of the unit
 * left is kept until it ends: a unit changed back within that window counts on from what it held
 * (Redis, whose counters are keyed by the unit, keeps them the same way), instead of from 0, which
 * would admit the limit again.
 */
export class LimitCounters {
  unit: WindowUnit;
  start: number;
  end: number;
  input = 0;
  output = 0;
  /** Windows of the other units this key had, not ended when left (one per unit at most); null: none. */
  private others: KeptWindow[] | null = null;
  /** The window (of this unit) the clock stepped back from, with its counts, until the clock is past it; null: none. */
  private ahead: KeptWindow | null = null;

  constructor(unit: WindowUnit, now: number) {
    this.unit = unit;
    this.start = windowStart(unit, now);
    this.end = windowEnd(unit, now);
  }

  /** Moves to the window containing `now` when the current one ended or the unit changed. */
  roll(unit: WindowUnit, now: number): void {
    if (unit === this.unit) {
      if (now < this.end) {
        if (now < this.start) this.stepBack(now);
        return;
      }
      if (this.ahead !== null && this.returnTo(this.ahead, now)) return;
    } else {
      this.ahead = null;
      this.keepCurrent(now);
      if (this.resume(unit, now)) return;
    }
    this.unit = unit;
    this.start = windowStart(unit, now);
    this.end = windowEnd(unit, now);
    this.input = 0;
    this.output = 0;
  }

  /**
   * The clock stepped back before this window's start (an NTP step, a VM resumed). The windows
   * between are lived again, as the clock names them: the one that holds `now` takes over with this
   * one's counts (what was just admitted is not admitted again at once), each later one starts from
   * 0, and this one is kept, with its counts, for when the clock comes back to it (returnTo): no
   * window the clock names admits more than the limit, and a refusal waits for one window at most,
   * not for the length of the step. (A clock stepped forward ends the window as if the time had
   * passed; its counts are gone.)
   */
  private stepBack(now: number): void {
    // Of two steps back, the window furthest ahead is kept (one between comes back from 0: its
    // counts went into the window of the new time).
    if (this.ahead === null || this.ahead.start < this.start) this.ahead = this.window();
    this.start = windowStart(this.unit, now);
    this.end = windowEnd(this.unit, now);
  }

  /** Rolling on to `now`: into the window stepped back from, with its counts (true); past it, forgets it. */
  private returnTo(w: KeptWindow, now: number): boolean {
    if (now >= w.end) {
      this.ahead = null;
      return false;
    }
    if (now < w.start) return false;
    this.ahead = null;
    this.takeUp(w);
    return true;
  }

  /** When the key's last window ends, this one's or a kept one's (the one the clock stepped back from too). */
  lastEnd(): number {
    let end = this.end;
    if (this.others !== null) for (const w of this.others) if (w.end > end) end = w.end;
    if (this.ahead !== null && this.ahead.end > end) end = this.ahead.end;
    return end;
  }

  /** Keeps the current window (the unit is being left) while it lasts; drops kept ones that ended. */
  private keepCurrent(now: number): void {
    const kept = (this.others ?? []).filter((w) => w.unit !== this.unit && now < w.end);
    if (now < this.end) kept.push(this.window());
    this.others = kept.length === 0 ? null : kept;
  }

  /** Takes up the kept window of `unit` that holds `now`, if any: true when it did. */
  private resume(unit: WindowUnit, now: number): boolean {
    const others = this.others;
    if (others === null) return false;
    const i = others.findIndex((w) => w.unit === unit && w.start <= now && now < w.end);
    if (i === -1) return false;
    const w = others[i];
    others.splice(i, 1);
    if (others.length === 0) this.others = null;
    this.takeUp(w);
    return true;
  }

  /** The current window and its counts, to keep (a unit left, a window the clock stepped back from). */
  private window(): KeptWindow {
    return { unit: this.unit, start: this.start, end: this.end, input: this.input, output: this.output };
  }

  /** Counts on in kept window `w` (a unit changed back, the clock come back to it). */
  private takeUp(w: KeptWindow): void {
    this.unit = w.unit;
    this.start = w.start;
    this.end = w.end;
    this.input = w.input;
    this.output = w.output;
  }
}

/** One limit of a multi-limit admission, as the primary gets it over IPC (null: no limit). */
export interface RawTerm {
  key: LimitKey;
  inLimit: number | null;
  outLimit: number | null;
  unit: WindowUnit;
  shadow: boolean;
}

/** How often (ms) entries of ended windows are dropped, checked on use. */
export const SWEEP_INTERVAL_MS = 60_000;

/**
 * Exact in-memory token counters for one process (TokenLimiter semantics in limiter.ts).
 * Counters are keyed by limit key and follow the key's unit window, never the limit values,
 * so editing a limit keeps the counts; changing the unit starts the new unit's window at 0, and a
 * unit changed back within its window counts on from what that window held (LimitCounters).
 * Counters always count both directions, so a limit added later in a window sees what was used.
 * One entry per key holding its current window (and, after a change of unit, the windows of the
 * units left until they end); entries whose windows all ended are swept.
 * Synchronous: in the local mode it runs in the cluster primary, which serializes all decisions.
 */
export class CounterStore implements TokenLimiter {
  private readonly clock: Clock;
  private readonly limits = new Map<string, LimitCounters>();
  private nextSweepAt: number;
  private readonly scratch: number[] = [];

  constructor(clock: Clock = systemClock) {
    this.clock = clock;
    this.nextSweepAt = clock() + SWEEP_INTERVAL_MS;
  }

  /** Number of limits with a live window (for tests and metrics). */
  get size(): number {
    return this.limits.size;
  }

  admit(key: LimitKey, limit: RateLimitSpec, inputTokens: number): Decision {
    const out = this.scratch;
    out.length = 0;
    this.admitInto(out, key, limit.inputTokensPerUnit, limit.outputTokensPerUnit, limit.unit, inputTokens);
    return decodeDecision(out, 0);
  }

  /**
   * The admission decision, appended to `out` as DECISION_STRIDE numbers (decision-codec.ts).
   * `null` limits are not checked.
   */
  admitInto(
    out: number[],
    key: LimitKey,
    inputLimit: number | null,
    outputLimit: number | null,
    unit: WindowUnit,
    inputTokens: number,
    now: number = this.clock(),
  ): void {
    checkTokenCount(inputTokens, 'input tokens');
    const c = this.counters(key, unit, now);
    let status = STATUS_ALLOWED;
    if (inputLimit !== null && c.input + inputTokens > inputLimit) status = STATUS_REJECTED_INPUT;
    else if (outputLimit !== null && c.output >= outputLimit) status = STATUS_REJECTED_OUTPUT;
    else c.input += inputTokens;
    const reset = secondsUntil(c.end, now);
    out.push(status, reset);
    if (inputLimit === null) out.push(NO_LIMIT, 0, 0);
    else out.push(inputLimit, inputLimit > c.input ? inputLimit - c.input : 0, reset);
    if (outputLimit === null) out.push(NO_LIMIT, 0, 0);
    else out.push(outputLimit, outputLimit > c.output ? outputLimit - c.output : 0, reset);
  }

  admitAll(terms: readonly LimitTerm[], inputTokens: number): Decision[] {
    const out = this.scratch;
    out.length = 0;
    this.admitAllInto(out, terms.map(rawTerm), inputTokens);
    return terms.map((_, i) => decodeDecision(out, i * DECISION_STRIDE));
  }

  /**
   * The decisions of one admission against several limits (limiter.ts admitAll), appended to
   * `out` as DECISION_STRIDE numbers per term. Returns whether the request was admitted.
   */
  admitAllInto(out: number[], terms: readonly RawTerm[], inputTokens: number, now: number = this.clock()): boolean {
    checkTokenCount(inputTokens, 'input tokens');
    const at = out.length;
    let admitted = true;
    for (const t of terms) {
      const c = this.counters(t.key, t.unit, now);
      let status = STATUS_ALLOWED;
      if (t.inLimit !== null && c.input + inputTokens > t.inLimit) status = STATUS_REJECTED_INPUT;
      else if (t.outLimit !== null && c.output >= t.outLimit) status = STATUS_REJECTED_OUTPUT;
      if (status !== STATUS_ALLOWED && !t.shadow) admitted = false;
      out.push(status, secondsUntil(c.end, now), 0, 0, 0, 0, 0, 0);
    }
    for (let i = 0; i < terms.length; i++) {
      const t = terms[i];
      const c = this.counters(t.key, t.unit, now);
      if (admitted) c.input += inputTokens;
      const o = at + i * DECISION_STRIDE;
      const reset = out[o + 1];
      if (t.inLimit === null) out[o + 2] = NO_LIMIT;
      else { out[o + 2] = t.inLimit; out[o + 3] = t.inLimit > c.input ? t.inLimit - c.input : 0; out[o + 4] = reset; }
      if (t.outLimit === null) out[o + 5] = NO_LIMIT;
      else { out[o + 5] = t.outLimit; out[o + 6] = t.outLimit > c.output ? t.outLimit - c.output : 0; out[o + 7] = reset; }
    }
    return admitted;
  }

  /**
   * The key's counters in the window containing `now` (a new window starts at 0); for the lease
   * book, which reads the clock once per decision (now()) so that every count of it is of one window.
   */
  current(key: LimitKey, unit: WindowUnit, now: number = this.clock()): LimitCounters {
    return this.counters(key, unit, now);
  }

  /** The store's clock. */
  now(): number {
    return this.clock();
  }

  chargeOutput(key: LimitKey, limit: RateLimitSpec, outputTokens: number): void {
    this.chargeOutputRaw(key, limit.unit, outputTokens);
  }

  chargeOutputRaw(key: LimitKey, unit: WindowUnit, outputTokens: number): void {
    checkTokenCount(outputTokens, 'output tokens');
    this.counters(key, unit, this.clock()).output += outputTokens;
  }

  adjustInput(key: LimitKey, limit: RateLimitSpec, delta: number): void {
    this.adjustInputRaw(key, limit.unit, delta);
  }

  adjustInputRaw(key: LimitKey, unit: WindowUnit, delta: number): void {
    checkTokenDelta(delta, 'input token adjustment');
    const c = this.counters(key, unit, this.clock());
    const next = c.input + delta;
    c.input = next > 0 ? next : 0;
  }

  async close(): Promise<void> {
    this.limits.clear();
  }

  private counters(key: LimitKey, unit: WindowUnit, now: number): LimitCounters {
    if (now >= this.nextSweepAt) this.sweep(now);
    let c = this.limits.get(key);
    if (c === undefined) {
      c = new LimitCounters(unit, now);
      this.limits.set(key, c);
    } else {
      c.roll(unit, now);
    }
    return c;
  }

  /** Drops limits whose window ended: their counts no longer matter. */
  private sweep(now: number): void {
    this.nextSweepAt = now + SWEEP_INTERVAL_MS;
    for (const [key, c] of this.limits) if (now >= c.lastEnd()) this.limits.delete(key);
  }
}

function rawTerm(t: LimitTerm): RawTerm {
  return { key: t.key, inLimit: t.limit.inputTokensPerUnit, outLimit: t.limit.outputTokensPerUnit, unit: t.limit.unit, shadow: isShadow(t.limit) };
}
