/**
 * After an answer (settle-usage.ts): the request's counts are corrected at once, and the limits'
 * settles are sent without the request waiting for them (a Redis settle may wait up to 20 ms for
 * a call to ride along with); only counting the text off the event loop is waited for.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { AnswerUsage } from '../../../src/api/inference-api.js';
import type { RateLimitSpec } from '../../../src/config/resource-types.js';
import type { RequestContext } from '../../../src/http/request-context.js';
import type { LimiterTerm } from '../../../src/ratelimit/admit-all.js';
import type { TokenLimiter } from '../../../src/ratelimit/limiter.js';
import type { TokenCounter } from '../../../src/tokens/token-counter.js';
import { settleUsage } from '../../../src/usage/settle-usage.js';

const LIMIT: RateLimitSpec = { inputTokensPerUnit: 1_000, outputTokensPerUnit: 1_000, unit: 'minute', global: null, mode: 'enforce' };

interface Settled { key: string; inputDelta: number; output: number }

/** A limiter whose settles answer with `answer()` (a promise that may never settle, or reject). */
function limiter(settled: Settled[], answer: () => Promise<void>): TokenLimiter {
  return {
    admit: () => { throw new Error('not used'); },
    chargeOutput: () => { throw new Error('not used'); },
    adjustInput: () => { throw new Error('not used'); },
    settle: (key, _limit, inputDelta, output) => {
      settled.push({ key, inputDelta, output });
      return answer();
    },
    close: async () => {},
  };
}

const context = (admittedAt = Date.now()): RequestContext => ({ inputTokens: 5, outputTokens: 0, outputTokensEstimated: 0, admittedAt, admittedByFailureMode: 0, admittedLateCharges: null, admittedWindows: null }) as unknown as RequestContext;
const usage = (over: Partial<AnswerUsage>): AnswerUsage => ({ promptTokens: 7, completionTokens: 3, text: '', generated: null, ...over });
const counter = (count: (text: string) => number | Promise<number>): TokenCounter => ({ countText: count }) as unknown as TokenCounter;

/**
 * Date.now() fixed in the middle of a minute (timers stay real): the request is admitted and
 * settled in one minute, so its input correction is owed whatever the time the test runs at.
 */
function midMinute(): void {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(Date.UTC(2025, 0, 15, 10, 30, 20));
}

describe('settling an answer\'s usage on its limits', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a count the pod reported past 2^53 (1e300, twenty digits) is taken as not reported: the router\'s own counts stand and the other count is still charged; a fraction is rounded', () => {
    midMinute();
    const settled: Settled[] = [];
    const terms: LimiterTerm[] = [{ key: 'route/default/r', limit: LIMIT, limiter: limiter(settled, async () => {}) }];
    const huge = context();
    expect(settleUsage(huge, counter(() => 4), usage({ promptTokens: 1e300, completionTokens: 50 }), terms)).toBeUndefined();
    expect([huge.inputTokens, huge.outputTokens]).toEqual([5, 50]);
    const twenty = context();
    expect(settleUsage(twenty, counter(() => 4), usage({ promptTokens: 9, completionTokens: 1e20, text: 'four tokens of text' }), terms)).toBeUndefined();
    expect([twenty.inputTokens, twenty.outputTokens]).toEqual([9, 4]);
    const fraction = context();
    settleUsage(fraction, counter(() => 0), usage({ promptTokens: 6.5, completionTokens: 2.7 }), terms);
    expect([fraction.inputTokens, fraction.outputTokens]).toEqual([7, 3]);
    expect(settled).toEqual([
      { key: 'route/default/r', inputDelta: 0, output: 50 },
      { key: 'route/default/r', inputDelta: 4, output: 4 },
      { key: 'route/default/r', inputDelta: 2, output: 3 },
    ]);
  });

  it('does not wait for a limit store: every term is settled at once, even while the first one\'s settle is still pending', () => {
    midMinute();
    const settled: Settled[] = [];
    const pending = limiter(settled, () => new Promise<void>(() => {})); // never answers
    const terms: LimiterTerm[] = [{ key: 'route/default/r', limit: LIMIT, limiter: pending }, { key: 'tenant/key/t', limit: LIMIT, limiter: pending }];
    const ctx = context();
    expect(settleUsage(ctx, counter(() => 0), usage({}), terms)).toBeUndefined();
    expect(ctx.inputTokens).toBe(7);
    expect(ctx.outputTokens).toBe(3);
    expect(settled).toEqual([
      { key: 'route/default/r', inputDelta: 2, output: 3 },
      { key: 'tenant/key/t', inputDelta: 2, output: 3 },
    ]);
  });

  it('the input correction goes only to a limit whose admitting window is still on; the output to every limit', () => {
    const settled: Settled[] = [];
    const store = limiter(settled, () => Promise.resolve());
    const DAY: RateLimitSpec = { ...LIMIT, unit: 'day' };
    const terms: LimiterTerm[] = [{ key: 'route/default/r', limit: LIMIT, limiter: store }, { key: 'tenant/key/t', limit: DAY, limiter: store }];
    // Admitted in the minute before this one, in this day (unless the day just began).
    const now = Date.now();
    const admittedAt = Math.floor(now / 60_000) * 60_000 - 1;
    const sameDay = Math.floor(admittedAt / 86_400_000) === Math.floor(now / 86_400_000);
    const ctx = context(admittedAt);
    settleUsage(ctx, counter(() => 0), usage({}), terms);
    expect(ctx.inputTokens).toBe(7); // the record keeps what the backend reported
    expect(settled).toEqual([
      { key: 'route/default/r', inputDelta: 0, output: 3 },
      { key: 'tenant/key/t', inputDelta: sameDay ? 2 : 0, output: 3 },
    ]);
  });

  it('a store that fails the settle is not the request\'s failure (nothing rejects unhandled)', async () => {
    const settled: Settled[] = [];
    const failing = limiter(settled, () => Promise.reject(new Error('store down')));
    const ctx = context();
    expect(settleUsage(ctx, counter(() => 0), usage({}), [{ key: 'route/default/r', limit: LIMIT, limiter: failing }])).toBeUndefined();
    await new Promise((r) => setTimeout(r, 10)); // an unhandled rejection would fail the run here
    expect(settled).toHaveLength(1);
  });

  it('counting the text off the event loop is waited for, then the output it counted is settled', async () => {
    midMinute();
    const settled: Settled[] = [];
    const pending = limiter(settled, () => new Promise<void>(() => {}));
    const ctx = context();
    const done = settleUsage(ctx, counter(() => Promise.resolve(11)), usage({ completionTokens: null, text: 'generated text' }), [{ key: 'route/default/r', limit: LIMIT, limiter: pending }]);
    expect(done).toBeInstanceOf(Promise);
    expect(settled).toEqual([]);
    await done; // resolves although the settle never answers
    expect(ctx.outputTokens).toBe(11);
    expect(settled).toEqual([{ key: 'route/default/r', inputDelta: 2, output: 11 }]);
  });

  it('a stream\'s estimated part is kept beside its output, only when the backend reported no count', () => {
    const generated = { add: () => {}, stop: () => {}, uncounted: () => {}, tokens: () => 40, estimatedTokens: 30 };
    const cut = context();
    settleUsage(cut, counter(() => 0), usage({ completionTokens: null, generated }), null);
    expect(cut.outputTokens).toBe(40);
    expect(cut.outputTokensEstimated).toBe(30);
    const reported = context();
    settleUsage(reported, counter(() => 0), usage({ completionTokens: 50, generated }), null);
    expect(reported.outputTokens).toBe(50);
    expect(reported.outputTokensEstimated).toBe(0);
  });
});
