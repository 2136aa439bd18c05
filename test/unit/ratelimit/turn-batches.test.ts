/**
 * TurnBatches: which operations share a script call of the global limit, and when each call goes
 * out. The calls here are handed to recording functions instead of Redis (what a call does in
 * Redis is tested against a real redis-server in redis-batching.test.ts and redis-leases.test.ts).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RateLimitSpec } from '../../../src/config/resource-types.js';
import type { LimitTerm } from '../../../src/ratelimit/limiter.js';
import { MAX_BATCH_ADMISSIONS, type Batch } from '../../../src/ratelimit/redis/batch.js';
import type { MultiBatch } from '../../../src/ratelimit/redis/multi-batch.js';
import { TurnBatches } from '../../../src/ratelimit/redis/turn-batches.js';
import { ADMIT_ALL_LUA } from '../../../src/ratelimit/redis/lua/admit-all.js';
import { LimiterScript } from '../../../src/ratelimit/redis/script-command.js';
import { ScriptArgs } from '../../../src/ratelimit/redis/script-args.js';
import { bulkStrings } from '../../helpers/resp-bulk.js';

const SETTLE_WAIT = 20;

function spec(input: number | null, output: number | null, unit: RateLimitSpec['unit'] = 'minute'): RateLimitSpec {
  return { inputTokensPerUnit: input, outputTokensPerUnit: output, unit, global: null, mode: 'enforce' };
}

function collector(clock: (() => number) | null = null): { batches: TurnBatches; sent: Batch[]; sentMulti: MultiBatch[] } {
  const sent: Batch[] = [];
  const sentMulti: MultiBatch[] = [];
  return { batches: new TurnBatches(clock, SETTLE_WAIT, (b) => sent.push(b), (b) => sentMulti.push(b)), sent, sentMulti };
}

/** Lets the turn end (setImmediate callbacks run). */
const turnEnd = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

afterEach(() => {
  vi.useRealTimers();
});

describe('TurnBatches', () => {
  it("one turn's admissions of a key share one batch, sent when the turn ends; another key gets its own", async () => {
    const { batches, sent } = collector();
    const limit = spec(100, null);
    const a = batches.batchFor('route-a', limit, true);
    void a.admit(limit, 1);
    expect(batches.batchFor('route-a', limit, true)).toBe(a);
    void a.admit(limit, 2);
    const b = batches.batchFor('route-b', limit, true);
    void b.admit(limit, 3);
    expect(b).not.toBe(a);
    expect(sent).toEqual([]);
    await turnEnd();
    expect(sent).toEqual([a, b]);
    expect(a.tokens).toEqual([1, 2]);
    expect(a.base).toBe('ir:{route-a}');
    // The next turn starts new batches.
    expect(batches.batchFor('route-a', limit, true)).not.toBe(a);
  });

  it('a limit of another unit, or another clock reading, is another batch', async () => {
    let now = 1_000;
    const { batches } = collector(() => now);
    const minute = batches.batchFor('route', spec(100, null, 'minute'), true);
    expect(batches.batchFor('route', spec(100, null, 'hour'), true)).not.toBe(minute);
    expect(batches.batchFor('route', spec(100, null, 'minute'), true)).toBe(minute);
    now = 1_001;
    const later = batches.batchFor('route', spec(100, null, 'minute'), true);
    expect(later).not.toBe(minute);
    expect(later.now).toBe('1001');
    expect(minute.now).toBe('1000');
    await turnEnd();
  });

  it('an admission under other limit values, or into a full batch, spills the batch: both go out, the spilled one first', async () => {
    const { batches, sent } = collector();
    const first = batches.batchFor('route', spec(100, null), true);
    void first.admit(spec(100, null), 1);
    const edited = batches.batchFor('route', spec(200, null), true);
    expect(edited).not.toBe(first);
    void edited.admit(spec(200, null), 1);
    for (let i = 1; i < MAX_BATCH_ADMISSIONS; i++) void edited.admit(spec(200, null), 1);
    const overflow = batches.batchFor('route', spec(200, null), true);
    expect(overflow).not.toBe(edited);
    void overflow.admit(spec(200, null), 1);
    await turnEnd();
    expect(sent).toEqual([first, edited, overflow]);
    expect(edited.admissions.length).toBe(MAX_BATCH_ADMISSIONS);
  });

  it("a turn's settles alone wait for an admission of their key, and ride along with it", async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { batches, sent } = collector();
    const limit = spec(100, 100);
    const s = batches.batchFor('route', limit, false);
    void s.settle(limit, -3, 40);
    await turnEnd();
    expect(sent).toEqual([]);
    const a = batches.batchFor('route', limit, true);
    expect(a).toBe(s);
    void a.admit(limit, 5);
    await turnEnd();
    expect(sent).toEqual([s]);
    expect(s.outputTokens).toBe(40);
    expect(s.inputDelta).toBe(-3);
    expect(s.tokens).toEqual([5]);
  });

  it('settles with no admission of their key go out alone after the settle wait, not before', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { batches, sent } = collector();
    const limit = spec(100, 100);
    const s = batches.batchFor('route', limit, false);
    void s.settle(limit, 0, 7);
    await turnEnd();
    vi.advanceTimersByTime(SETTLE_WAIT - 1);
    expect(sent).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(sent).toEqual([s]);
    // The timer is not left behind: a later admission's batch is a new one, sent at its turn's end.
    const a = batches.batchFor('route', limit, true);
    expect(a).not.toBe(s);
    void a.admit(limit, 1);
    await turnEnd();
    expect(sent).toEqual([s, a]);
  });

  it('sendUnlessAdmitting sends a batch of settles at once, and leaves one with an admission to the turn end', async () => {
    const { batches, sent } = collector();
    const limit = spec(100, null);
    const settles = batches.batchFor('quiet', limit, false);
    void settles.settle(limit, -2, 0);
    batches.sendUnlessAdmitting('quiet', 'minute');
    expect(sent).toEqual([settles]);
    const busy = batches.batchFor('busy', limit, true);
    void busy.admit(limit, 1);
    batches.sendUnlessAdmitting('busy', 'minute');
    batches.sendUnlessAdmitting('none', 'minute');
    expect(sent).toEqual([settles]);
    await turnEnd();
    expect(sent).toEqual([settles, busy]);
  });

  it('multi-limit admissions under the same limits share a call; other limit values do not', async () => {
    const { batches, sentMulti } = collector();
    const terms = (tenantInput: number): LimitTerm[] => [
      { key: 'route', limit: spec(100, null) },
      { key: 'tenant', limit: spec(tenantInput, null, 'hour') },
    ];
    const m = batches.multiBatchFor(terms(50));
    void m.admit(terms(50), 1);
    expect(batches.multiBatchFor(terms(50))).toBe(m);
    const other = batches.multiBatchFor(terms(60));
    expect(other).not.toBe(m);
    void other.admit(terms(60), 1);
    expect(sentMulti).toEqual([]);
    await turnEnd();
    expect(sentMulti).toEqual([m, other]);
    // numKeys, the key bases, the clock reading ('' = Redis's own) and n lead the call's arguments.
    const script = new LimiterScript(ADMIT_ALL_LUA);
    const call = m.writeArgs(new ScriptArgs().begin()).call(script);
    expect(bulkStrings(call.bytes).slice(0, 7)).toEqual(['evalsha', script.sha, '2', 'ir:{route}', 'ir:{tenant}', '', '2']);
  });

  it('flushAll sends everything collected at once, settles waiting for an admission included', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { batches, sent, sentMulti } = collector();
    const limit = spec(100, 100);
    const waiting = batches.batchFor('waiting', limit, false);
    void waiting.settle(limit, 0, 1);
    await turnEnd();
    const admitting = batches.batchFor('admitting', limit, true);
    void admitting.admit(limit, 1);
    const terms: LimitTerm[] = [{ key: 'route', limit }, { key: 'tenant', limit }];
    const m = batches.multiBatchFor(terms);
    void m.admit(terms, 1);
    batches.flushAll();
    expect(sentMulti).toEqual([m]);
    expect(sent).toEqual([waiting, admitting]);
    vi.advanceTimersByTime(SETTLE_WAIT * 2);
    await turnEnd();
    expect(sent).toEqual([waiting, admitting]);
    expect(sentMulti).toEqual([m]);
  });
});
