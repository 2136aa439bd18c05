import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { OVER_BUDGET } from '../../../src/tokens/bpe-count.js';
import { TokenizerPool } from '../../../src/tokens/tokenizer-pool.js';
import { busyAfterThisTurn } from '../../helpers/busy-loop.js';
import { compiledTaskFile, hangingTaskFile, removeCompiled } from './compiled-task.js';

const pools: TokenizerPool[] = [];
afterEach(async () => { await Promise.all(pools.splice(0).map((p) => p.close())); });
afterAll(removeCompiled);

function pool(filename: string, budgetMs: number): TokenizerPool {
  const p = new TokenizerPool({ filename, size: 1, queue: 2, budgetMs });
  pools.push(p);
  return p;
}

describe('tokenizer pool', () => {
  it('counts, and gives capacity back when answered', async () => {
    const p = pool(compiledTaskFile(), 1000);
    await p.ready();
    const pending = p.count(['San Francisco is a', 'San Francisco is a']);
    expect(p.inFlight).toBe(1);
    expect(await pending).toBe(8);
    expect(p.inFlight).toBe(0);
    expect(p.full).toBe(false);
  });

  it('reports full at size + queue tasks in flight', async () => {
    const p = pool(compiledTaskFile(), 10_000);
    await p.ready(); // loaded threads, and a budget a loaded machine cannot exceed
    const all = [p.count(['a']), p.count(['b']), p.count(['c'])];
    expect(p.full).toBe(true);
    expect(await Promise.all(all)).toEqual([1, 1, 1]);
    expect(p.full).toBe(false);
  });

  it('answers OVER_BUDGET at the budget, then terminates a thread that does not stop, freeing its capacity', async () => {
    const p = pool(hangingTaskFile(), 20);
    await p.ready();
    expect(await p.count(['anything'])).toBe(OVER_BUDGET);
    // The caller was answered; the thread is still busy until the hard stop terminates it.
    expect(p.inFlight).toBe(1);
    await vi.waitFor(() => expect(p.inFlight).toBe(0), { timeout: 10_000, interval: 50 });
  });

  it('a count the thread answered within the budget while this event loop was held past it is the count, not the estimate', async () => {
    const p = pool(compiledTaskFile(), 100);
    await p.ready();
    expect(await p.count(['San Francisco is a'])).toBe(4); // the thread has counted once: warm
    let pending: Promise<number> | null = null;
    // The task is posted at once, in the turn that is then held; the thread answers within a
    // millisecond (or within the second the loop is held, on a loaded machine).
    await busyAfterThisTurn(1000, () => { pending = p.count(['San Francisco is a']); });
    expect(await pending).toBe(4);
    expect(p.inFlight).toBe(0);
  });

  it('ready() rejects when the worker file does not load', async () => {
    const p = pool(`${compiledTaskFile()}.missing.js`, 50);
    await expect(p.ready()).rejects.toThrow();
    expect(await p.count(['x'])).toBe(OVER_BUDGET);
  });
});
