import type { RateLimitSpec, WindowUnit } from '../../config/resource-types.js';
import { decodeDecision, NO_LIMIT, STATUS_ALLOWED, STATUS_REJECTED_INPUT, STATUS_REJECTED_OUTPUT } from '../decision-codec.js';
import { systemClock, type Clock } from '../../clock.js';
import type { Decision, TokenLimiter } from '../limiter.js';
import { secondsUntil, windowEnd, windowStart } from '../windows.js';
import { checkTokenCount, checkTokenDelta } from '../token-amounts.js';

/** Counters of one route in its current window; the only window kept for the route. */
export class RouteCounters {
  unit: WindowUnit;
  start: number;
  end: number;
  input = 0;
  output = 0;

  constructor(unit: WindowUnit, now: number) {
    this.unit = unit;
    this.start = windowStart(unit, now);
    this.end = windowEnd(unit, now);
  }

  /** Moves to the window containing `now` when the current one ended or the unit changed. */
  roll(unit: WindowUnit, now: number): void {
    // A clock that steps back (now < start) keeps the current window: counting on is the
    // conservative choice, restarting would admit more than the limit.
    if (unit === this.unit && now < this.end) return;
    this.unit = unit;
    this.start = windowStart(unit, now);
    this.end = windowEnd(unit, now);
    this.input = 0;
    this.output = 0;
  }
}

/** How often (ms) entries of ended windows are dropped, checked on use. */
const SWEEP_INTERVAL_MS = 60_000;

/**
 * Exact in-memory token counters for one process (TokenLimiter semantics in limiter.ts).
 * Counters are keyed by route key and follow the route's unit window, never the limit values,
 * so editing a limit keeps the counts; changing the unit starts the new unit's window at 0.
 * Counters always count both directions, so a limit added later in a window sees what was used.
 * One entry per route holding only the current window; entries of ended windows are swept.
 * Synchronous: in the local mode it runs in the cluster primary, which serializes all decisions.
 */
export class CounterStore implements TokenLimiter {
  private readonly clock: Clock;
  private readonly routes = new Map<string, RouteCounters>();
  private nextSweepAt: number;
  private readonly scratch: number[] = [];

  constructor(clock: Clock = systemClock) {
    this.clock = clock;
    this.nextSweepAt = clock() + SWEEP_INTERVAL_MS;
  }

  /** Number of routes with a live window (for tests and metrics). */
  get size(): number {
    return this.routes.size;
  }

  admit(route: string, limit: RateLimitSpec, inputTokens: number): Decision {
    const out = this.scratch;
    out.length = 0;
    this.admitInto(out, route, limit.inputTokensPerUnit, limit.outputTokensPerUnit, limit.unit, inputTokens);
    return decodeDecision(out, 0);
  }

  /**
   * The admission decision, appended to `out` as DECISION_STRIDE numbers (decision-codec.ts).
   * `null` limits are not checked.
   */
  admitInto(
    out: number[],
    route: string,
    inputLimit: number | null,
    outputLimit: number | null,
    unit: WindowUnit,
    inputTokens: number,
  ): void {
    checkTokenCount(inputTokens, 'input tokens');
    const now = this.clock();
    const c = this.counters(route, unit, now);
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

  /** The route's counters in the window containing now (a new window starts at 0); for the lease book. */
  current(route: string, unit: WindowUnit): RouteCounters {
    return this.counters(route, unit, this.clock());
  }

  chargeOutput(route: string, limit: RateLimitSpec, outputTokens: number): void {
    this.chargeOutputRaw(route, limit.unit, outputTokens);
  }

  chargeOutputRaw(route: string, unit: WindowUnit, outputTokens: number): void {
    checkTokenCount(outputTokens, 'output tokens');
    this.counters(route, unit, this.clock()).output += outputTokens;
  }

  adjustInput(route: string, limit: RateLimitSpec, delta: number): void {
    this.adjustInputRaw(route, limit.unit, delta);
  }

  adjustInputRaw(route: string, unit: WindowUnit, delta: number): void {
    checkTokenDelta(delta, 'input token adjustment');
    const c = this.counters(route, unit, this.clock());
    const next = c.input + delta;
    c.input = next > 0 ? next : 0;
  }

  async close(): Promise<void> {
    this.routes.clear();
  }

  private counters(route: string, unit: WindowUnit, now: number): RouteCounters {
    if (now >= this.nextSweepAt) this.sweep(now);
    let c = this.routes.get(route);
    if (c === undefined) {
      c = new RouteCounters(unit, now);
      this.routes.set(route, c);
    } else {
      c.roll(unit, now);
    }
    return c;
  }

  /** Drops routes whose window ended: their counts no longer matter. */
  private sweep(now: number): void {
    this.nextSweepAt = now + SWEEP_INTERVAL_MS;
    for (const [route, c] of this.routes) if (now >= c.end) this.routes.delete(route);
  }
}
