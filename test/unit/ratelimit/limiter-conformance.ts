/**
 * The shared semantics of every TokenLimiter (local store, local IPC client, Redis limiter).
 * Uses only the TokenLimiter interface and the injected clock; every call is awaited, so
 * implementations may answer synchronously or asynchronously. Each test uses its own route
 * names, so an implementation may share one backing store across tests.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RateLimitSpec, WindowUnit } from '../../../src/config/resource-types.js';
import type { Clock } from '../../../src/clock.js';
import type { Decision, TokenLimiter } from '../../../src/ratelimit/limiter.js';
import { settleCounters } from '../../../src/ratelimit/settle.js';
import { admitTerms } from '../../../src/ratelimit/admit-all.js';

export interface LimiterUnderTest {
  limiter: TokenLimiter;
  cleanup(): Promise<void>;
}

export type MakeLimiter = (clock: Clock) => Promise<LimiterUnderTest>;

/** 2025-01-15T10:30:20.000Z: 40 s before the minute ends. */
const T0 = Date.UTC(2025, 0, 15, 10, 30, 20, 0);
/** The start of T0's minute. */
const T0_MINUTE = Date.UTC(2025, 0, 15, 10, 30, 0, 0);

/**
 * What a decision charged under T0's minute shows of its window: a store with a clock of its own
 * (Redis) names the window it charged (Decision.window), the start of that minute by the clock it
 * was given; the others name none.
 */
function windowShown(d: Decision): { window?: number } {
  return d.window === undefined ? {} : { window: T0_MINUTE };
}

function spec(
  inputTokensPerUnit: number | null,
  outputTokensPerUnit: number | null,
  unit: WindowUnit = 'minute',
): RateLimitSpec {
  return { inputTokensPerUnit, outputTokensPerUnit, unit, global: null, mode: 'enforce' };
}

/** The documented example: 10 input / 5000 output tokens per minute. */
const EXAMPLE = spec(10, 5000);
/** "San Francisco is a" counted as 4 input tokens. */
const PROMPT_TOKENS = 4;

let routeSeq = 0;

export function runLimiterConformance(name: string, make: MakeLimiter): void {
  describe(`TokenLimiter conformance: ${name}`, () => {
    let now = T0;
    const clock: Clock = () => now;
    let under: LimiterUnderTest;
    let limiter: TokenLimiter;
    /** A route key unique to this test run. */
    let route: (suffix?: string) => string;

    beforeEach(async () => {
      now = T0;
      under = await make(clock);
      limiter = under.limiter;
      const run = `${process.pid}-${Date.now().toString(36)}-${++routeSeq}`;
      route = (suffix = 'r') => `conf-${run}/${suffix}`;
    });

    afterEach(async () => {
      await under.cleanup();
    });

    const admit = async (r: string, limit: RateLimitSpec, tokens: number): Promise<Decision> =>
      await limiter.admit(r, limit, tokens);

    it('documented example: 4 + 4 admitted, the third 4-token prompt rejected by input (8 + 4 > 10)', async () => {
      const r = route();
      const first = await admit(r, EXAMPLE, PROMPT_TOKENS);
      expect(first).toEqual({
        allowed: true,
        rejectedBy: null,
        retryAfterSeconds: 40,
        input: { limit: 10, remaining: 6, resetSeconds: 40 },
        output: { limit: 5000, remaining: 5000, resetSeconds: 40 },
        ...windowShown(first),
      });
      const second = await admit(r, EXAMPLE, PROMPT_TOKENS);
      expect(second.allowed).toBe(true);
      expect(second.input).toEqual({ limit: 10, remaining: 2, resetSeconds: 40 });
      const third = await admit(r, EXAMPLE, PROMPT_TOKENS);
      expect(third).toEqual({
        allowed: false,
        rejectedBy: 'input',
        retryAfterSeconds: 40,
        input: { limit: 10, remaining: 2, resetSeconds: 40 },
        output: { limit: 5000, remaining: 5000, resetSeconds: 40 },
        ...windowShown(third),
      });
    });

    it('a rejection charges nothing: what is left can still be used', async () => {
      const r = route();
      await admit(r, EXAMPLE, 4);
      await admit(r, EXAMPLE, 4);
      expect((await admit(r, EXAMPLE, 4)).allowed).toBe(false);
      expect((await admit(r, EXAMPLE, 3)).allowed).toBe(false);
      const fits = await admit(r, EXAMPLE, 2);
      expect(fits.allowed).toBe(true);
      expect(fits.input?.remaining).toBe(0);
      expect((await admit(r, EXAMPLE, 1)).rejectedBy).toBe('input');
    });

    it('output limit: below it admits, once reached it rejects by output without charging input', async () => {
      const r = route();
      const limit = spec(1000, 100);
      await admit(r, limit, 10);
      await limiter.chargeOutput(r, limit, 99);
      const below = await admit(r, limit, 10);
      expect(below.allowed).toBe(true);
      expect(below.output).toEqual({ limit: 100, remaining: 1, resetSeconds: 40 });
      await limiter.chargeOutput(r, limit, 1);
      const reached = await admit(r, limit, 10);
      expect(reached).toEqual({
        allowed: false,
        rejectedBy: 'output',
        retryAfterSeconds: 40,
        input: { limit: 1000, remaining: 980, resetSeconds: 40 },
        output: { limit: 100, remaining: 0, resetSeconds: 40 },
        ...windowShown(reached),
      });
      // Still 980 left: the rejection did not charge input.
      expect((await admit(r, spec(1000, null), 980)).allowed).toBe(true);
    });

    it('input is checked before output: a prompt over the input limit is rejected by input', async () => {
      const r = route();
      const limit = spec(10, 5);
      await limiter.chargeOutput(r, limit, 5);
      expect((await admit(r, limit, 11)).rejectedBy).toBe('input');
      expect((await admit(r, limit, 1)).rejectedBy).toBe('output');
    });

    it('output past the limit is charged in full; requests wait for the window reset', async () => {
      const r = route();
      const limit = spec(null, 100);
      expect((await admit(r, limit, 5)).allowed).toBe(true);
      await limiter.chargeOutput(r, limit, 250);
      const blocked = await admit(r, limit, 5);
      expect(blocked.rejectedBy).toBe('output');
      expect(blocked.output?.remaining).toBe(0);
      expect(blocked.retryAfterSeconds).toBe(40);
      now = Date.UTC(2025, 0, 15, 10, 30, 59, 999);
      const last = await admit(r, limit, 5);
      expect(last.rejectedBy).toBe('output');
      expect(last.retryAfterSeconds).toBe(1);
      now = Date.UTC(2025, 0, 15, 10, 31, 0, 0);
      const fresh = await admit(r, limit, 5);
      expect(fresh.allowed).toBe(true);
      expect(fresh.output).toEqual({ limit: 100, remaining: 100, resetSeconds: 60 });
    });

    it('only an input limit: output has no state and no output charge blocks', async () => {
      const r = route();
      const limit = spec(10, null);
      const d = await admit(r, limit, 3);
      expect(d.output).toBeNull();
      expect(d.input).toEqual({ limit: 10, remaining: 7, resetSeconds: 40 });
      await limiter.chargeOutput(r, limit, 1_000_000);
      expect((await admit(r, limit, 7)).allowed).toBe(true);
      const over = await admit(r, limit, 1);
      expect(over.rejectedBy).toBe('input');
      expect(over.output).toBeNull();
    });

    it('only an output limit: input has no state and any prompt size is admitted', async () => {
      const r = route();
      const limit = spec(null, 50);
      const d = await admit(r, limit, 1_000_000);
      expect(d.allowed).toBe(true);
      expect(d.input).toBeNull();
      expect(d.output).toEqual({ limit: 50, remaining: 50, resetSeconds: 40 });
      await limiter.chargeOutput(r, limit, 50);
      const blocked = await admit(r, limit, 1);
      expect(blocked.rejectedBy).toBe('output');
      expect(blocked.input).toBeNull();
    });

    it('a prompt larger than the whole input limit is always rejected, even in a fresh window', async () => {
      const r = route();
      const big = await admit(r, EXAMPLE, 11);
      expect(big.rejectedBy).toBe('input');
      expect(big.input?.remaining).toBe(10);
      now += 60_000;
      expect((await admit(r, EXAMPLE, 11)).rejectedBy).toBe('input');
      const exact = await admit(r, EXAMPLE, 10);
      expect(exact.allowed).toBe(true);
      expect(exact.input?.remaining).toBe(0);
    });

    const rollovers: { unit: WindowUnit; last: number; next: number }[] = [
      { unit: 'second', last: Date.UTC(2025, 0, 15, 10, 30, 20, 999), next: Date.UTC(2025, 0, 15, 10, 30, 21, 0) },
      { unit: 'minute', last: Date.UTC(2025, 0, 15, 10, 30, 59, 999), next: Date.UTC(2025, 0, 15, 10, 31, 0, 0) },
      { unit: 'hour', last: Date.UTC(2025, 0, 15, 10, 59, 59, 999), next: Date.UTC(2025, 0, 15, 11, 0, 0, 0) },
      { unit: 'day', last: Date.UTC(2025, 0, 15, 23, 59, 59, 999), next: Date.UTC(2025, 0, 16, 0, 0, 0, 0) },
      { unit: 'month', last: Date.UTC(2025, 0, 31, 23, 59, 59, 999), next: Date.UTC(2025, 1, 1, 0, 0, 0, 0) },
      { unit: 'month', last: Date.UTC(2024, 1, 29, 23, 59, 59, 999), next: Date.UTC(2024, 2, 1, 0, 0, 0, 0) },
      { unit: 'month', last: Date.UTC(2024, 11, 31, 23, 59, 59, 999), next: Date.UTC(2025, 0, 1, 0, 0, 0, 0) },
    ];
    for (const { unit, last, next } of rollovers) {
      it(`window rollover per ${unit}: ${new Date(last).toISOString()} -> ${new Date(next).toISOString()}`, async () => {
        const r = route();
        const limit = spec(10, 20, unit);
        now = windowStartBefore(unit, next); // the window's first millisecond
        const first = await admit(r, limit, 10);
        expect(first.allowed).toBe(true);
        await limiter.chargeOutput(r, limit, 20);
        now = last;
        const blocked = await admit(r, limit, 1);
        expect(blocked.rejectedBy).toBe('input');
        expect(blocked.retryAfterSeconds).toBe(1);
        expect(blocked.input).toEqual({ limit: 10, remaining: 0, resetSeconds: 1 });
        expect(blocked.output).toEqual({ limit: 20, remaining: 0, resetSeconds: 1 });
        now = next;
        const fresh = await admit(r, limit, 10);
        expect(fresh.allowed).toBe(true);
        expect(fresh.input?.remaining).toBe(0);
        expect(fresh.output?.remaining).toBe(20);
      });
    }

    it('retry-after and reset are whole seconds to the UTC window end, rounded up, at least 1', async () => {
      const cases: { unit: WindowUnit; at: number; seconds: number }[] = [
        { unit: 'minute', at: Date.UTC(2025, 0, 15, 10, 30, 20, 0), seconds: 40 },
        { unit: 'minute', at: Date.UTC(2025, 0, 15, 10, 30, 20, 1), seconds: 40 },
        { unit: 'minute', at: Date.UTC(2025, 0, 15, 10, 30, 59, 1), seconds: 1 },
        { unit: 'minute', at: Date.UTC(2025, 0, 15, 10, 31, 0, 0), seconds: 60 },
        { unit: 'second', at: Date.UTC(2025, 0, 15, 10, 30, 20, 500), seconds: 1 },
        { unit: 'hour', at: Date.UTC(2025, 0, 15, 10, 30, 20, 0), seconds: 29 * 60 + 40 },
        { unit: 'day', at: Date.UTC(2025, 0, 15, 10, 30, 20, 0), seconds: 13 * 3600 + 29 * 60 + 40 },
        { unit: 'month', at: Date.UTC(2025, 0, 15, 10, 30, 20, 0), seconds: (Date.UTC(2025, 1, 1) - Date.UTC(2025, 0, 15, 10, 30, 20)) / 1000 },
        { unit: 'month', at: Date.UTC(2025, 1, 10, 0, 0, 0, 0), seconds: 19 * 86_400 },
      ];
      let i = 0;
      for (const c of cases) {
        now = c.at;
        const r = route(`reset-${i++}`);
        const limit = spec(5, 5, c.unit);
        const ok = await admit(r, limit, 5);
        expect(ok.input?.resetSeconds, `${c.unit} at ${new Date(c.at).toISOString()}`).toBe(c.seconds);
        expect(ok.output?.resetSeconds).toBe(c.seconds);
        const rejected = await admit(r, limit, 1);
        expect(rejected.retryAfterSeconds, `${c.unit} at ${new Date(c.at).toISOString()}`).toBe(c.seconds);
      }
    });

    it('adjustInput corrects the input counter up and down, never below 0', async () => {
      const r = route();
      await admit(r, EXAMPLE, 4);
      await limiter.adjustInput(r, EXAMPLE, 3);
      const d = await admit(r, EXAMPLE, 1);
      expect(d.input?.remaining).toBe(2); // 4 + 3 + 1 = 8
      expect((await admit(r, EXAMPLE, 3)).allowed).toBe(false);
      await limiter.adjustInput(r, EXAMPLE, -2);
      expect((await admit(r, EXAMPLE, 3)).input?.remaining).toBe(1); // 8 - 2 + 3 = 9
      await limiter.adjustInput(r, EXAMPLE, -100);
      const full = await admit(r, EXAMPLE, 10);
      expect(full.allowed).toBe(true);
      expect(full.input?.remaining).toBe(0);
    });

    it('settling an answer (input correction + output charge, one call where the store has it) equals the two calls', async () => {
      const r = route();
      await admit(r, EXAMPLE, 4);
      await settleCounters(limiter, r, EXAMPLE, 1, 4990); // backend said 5 prompt tokens, 4990 generated
      const d = await admit(r, EXAMPLE, 5);
      expect(d.input?.remaining).toBe(0); // 5 + 5 = 10
      expect(d.output?.remaining).toBe(10); // 5000 - 4990
      await settleCounters(limiter, r, EXAMPLE, -3, 0); // a correction alone
      await settleCounters(limiter, r, EXAMPLE, 0, 10); // a charge alone: output limit reached
      const e = await admit(r, EXAMPLE, 1);
      expect(e.allowed).toBe(false);
      expect(e.rejectedBy).toBe('output');
      expect(e.input?.remaining).toBe(3); // 10 - 3, and the rejection charged nothing
    });

    it('editing the limit values keeps the counters of the window', async () => {
      const r = route();
      await admit(r, EXAMPLE, 8);
      await limiter.chargeOutput(r, EXAMPLE, 30);
      const raised = spec(20, 40);
      const d = await admit(r, raised, 4);
      expect(d.allowed).toBe(true);
      expect(d.input).toEqual({ limit: 20, remaining: 8, resetSeconds: 40 });
      expect(d.output).toEqual({ limit: 40, remaining: 10, resetSeconds: 40 });
      const lowered = spec(12, 40);
      expect((await admit(r, lowered, 1)).rejectedBy).toBe('input'); // 12 + 1 > 12
      expect((await admit(r, spec(12, 30), 0)).rejectedBy).toBe('output');
    });

    it('counters count while a direction has no limit, so a limit added mid-window sees the usage', async () => {
      const r = route();
      await admit(r, spec(null, 100), 50);
      await limiter.chargeOutput(r, spec(100, null), 70);
      const d = await admit(r, spec(60, 100), 20);
      expect(d.rejectedBy).toBe('input'); // 50 + 20 > 60
      expect(d.input?.remaining).toBe(10);
      expect(d.output?.remaining).toBe(30);
    });

    it('routes are independent', async () => {
      const a = route('a');
      const b = route('b');
      await admit(a, EXAMPLE, 10);
      await limiter.chargeOutput(a, EXAMPLE, 5000);
      expect((await admit(a, EXAMPLE, 1)).allowed).toBe(false);
      const other = await admit(b, EXAMPLE, 10);
      expect(other.allowed).toBe(true);
      expect(other.output?.remaining).toBe(5000);
    });

    it('many concurrent admits never exceed the limit and use it up exactly', async () => {
      const r = route();
      const limit = spec(100, 1000);
      const decisions = await Promise.all(Array.from({ length: 120 }, () => admit(r, limit, 3)));
      const admitted = decisions.filter((d) => d.allowed).length;
      expect(admitted).toBe(33); // 33 * 3 = 99 <= 100 < 102
      for (const d of decisions) if (!d.allowed) expect(d.rejectedBy).toBe('input');
      const remaining = await admit(r, limit, 1);
      expect(remaining.allowed).toBe(true);
      expect(remaining.input?.remaining).toBe(0);
    });

    describe('several limits of one request (route and tenant, admitAll / admitTerms)', () => {
      const terms = (...ts: [string, RateLimitSpec][]) => ts.map(([key, limit]) => ({ key, limit, limiter }));
      const shadow = (s: RateLimitSpec): RateLimitSpec => ({ ...s, mode: 'shadow' });

      it('a request refused by the tenant limit charges the route nothing, and the reverse', async () => {
        const r = route();
        const tenantA = `tenant:key:${route('a')}`;
        const tenantB = `tenant:key:${route('b')}`;
        const routeLimit = spec(10, null);
        let ds = await admitTerms(terms([r, routeLimit], [tenantA, spec(4, null)]), 4);
        expect(ds.map((d) => d.allowed)).toEqual([true, true]);
        expect(ds.map((d) => d.input!.remaining)).toEqual([6, 0]);
        ds = await admitTerms(terms([r, routeLimit], [tenantA, spec(4, null)]), 4);
        expect(ds[1]).toMatchObject({ allowed: false, rejectedBy: 'input' });
        // The route was not charged: another tenant still gets 4 + 2 of its 6.
        ds = await admitTerms(terms([r, routeLimit], [tenantB, spec(100, null)]), 4);
        expect(ds.map((d) => d.allowed)).toEqual([true, true]);
        expect(ds[0].input!.remaining).toBe(2);
        // The route refuses (2 left): tenant B is not charged (96 left, so 96 more fit alone).
        ds = await admitTerms(terms([r, routeLimit], [tenantB, spec(100, null)]), 4);
        expect(ds[0]).toMatchObject({ allowed: false, rejectedBy: 'input' });
        expect((await admit(tenantB, spec(100, null), 96)).allowed).toBe(true);
        expect((await admit(tenantB, spec(100, null), 1)).allowed).toBe(false);
      });

      it('output is charged to every limit that admitted; an exhausted output limit of either refuses', async () => {
        const r = route();
        const t = `tenant:key:${route('t')}`;
        const ts = terms([r, spec(1000, 100)], [t, spec(1000, 50)]);
        expect((await admitTerms(ts, 4)).every((d) => d.allowed)).toBe(true);
        for (const x of ts) await settleCounters(limiter, x.key, x.limit, 0, 50);
        const ds = await admitTerms(ts, 4);
        expect(ds[0].allowed).toBe(true);
        expect(ds[1]).toMatchObject({ allowed: false, rejectedBy: 'output' });
        expect(ds[0].output!.remaining).toBe(50);
        // Refused: the route's input was not charged (4 of 1000 used).
        expect((await admit(r, spec(1000, 100), 996)).allowed).toBe(true);
      });

      it('admissions issued together (one turn) are decided one by one: exactly what fits, nothing charged for the refused', async () => {
        const r = route();
        const t = `tenant:key:${route('c')}`;
        const ts = terms([r, spec(1000, null)], [t, spec(21, null)]);
        const all = await Promise.all(Array.from({ length: 12 }, () => admitTerms(ts, 4)));
        expect(all.filter((ds) => ds.every((d) => d.allowed)).length).toBe(5);
        expect(all.filter((ds) => ds[1].rejectedBy === 'input').length).toBe(7);
        // The route holds the 5 admitted (20), not the refused: 980 more fit, 981 do not.
        expect((await admitTerms(terms([r, spec(1000, null)]), 981))[0].allowed).toBe(false);
        expect((await admitTerms(terms([r, spec(1000, null)]), 980))[0].allowed).toBe(true);
      });

      it('a shadow limit never refuses and is charged past its limit; an enforced refusal charges it nothing', async () => {
        const r = route();
        const t = `tenant:key:${route('s')}`;
        const ts = terms([r, spec(10, null)], [t, shadow(spec(4, null))]);
        let ds = await admitTerms(ts, 4);
        expect(ds.map((d) => d.allowed)).toEqual([true, true]);
        ds = await admitTerms(ts, 4);
        // The shadow limit says no (8 > 4) but the request is admitted and counted by both.
        expect(ds[0]).toMatchObject({ allowed: true, input: { remaining: 2 } });
        expect(ds[1]).toMatchObject({ allowed: false, rejectedBy: 'input' });
        ds = await admitTerms(ts, 4);
        expect(ds[0]).toMatchObject({ allowed: false, rejectedBy: 'input' });
        // The shadow counter holds 8 (not 12): 2 x 4 admitted, the refused one not charged.
        ds = await admitTerms(terms([t, shadow(spec(8, null))]), 0);
        expect(ds[0]).toMatchObject({ allowed: true, input: { remaining: 0 } });
        ds = await admitTerms(terms([t, shadow(spec(8, null))]), 1);
        expect(ds[0]).toMatchObject({ allowed: false, input: { remaining: 0 } });
      });
    });
  });
}

/** Start of the window that ends at `end` (its length, computed independently of src/). */
function windowStartBefore(unit: WindowUnit, end: number): number {
  const lengths: Record<Exclude<WindowUnit, 'month'>, number> = { second: 1e3, minute: 6e4, hour: 36e5, day: 864e5 };
  if (unit !== 'month') return end - lengths[unit];
  const d = new Date(end - 1);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}
