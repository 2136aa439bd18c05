import { randomBytes } from 'node:crypto';
import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTokenCounter, type RouterTokenCounter } from './request-counter.js';
import { parseTokenizerSettings } from '../../../src/tokens/tokenizer-settings.js';
import { compiledTaskFile, hangingTaskFile, removeCompiled } from './compiled-task.js';

let poolFile = '';
beforeAll(() => { poolFile = compiledTaskFile(); });

const counters: RouterTokenCounter[] = [];
afterEach(async () => { await Promise.all(counters.splice(0).map((c) => c.close())); });
afterAll(removeCompiled);

function counter(env: NodeJS.ProcessEnv, file = poolFile): RouterTokenCounter {
  // A generous default budget: on a loaded machine a pooled count must not fall back to chars
  // where a test expects the exact count (tests of the budget set their own).
  const c = createTokenCounter(parseTokenizerSettings({ ROUTER_TOKENIZER_INLINE_MAX_CHARS: '100', ROUTER_TOKENIZER_BUDGET_MS: '10000', ...env }), { poolFile: file });
  counters.push(c);
  return c;
}

/** A counter whose threads have loaded the tokenizer. */
async function readyCounter(env: NodeJS.ProcessEnv): Promise<RouterTokenCounter> {
  const c = counter(env);
  await c.ready();
  return c;
}

const SENTENCE = 'The router counts the tokens of every prompt before it forwards it. ';
const prose = (chars: number): string => SENTENCE.repeat(Math.ceil(chars / SENTENCE.length)).slice(0, chars);
/** Random base64 without whitespace: costly to BPE even in bounded pieces (~0.2 µs per character). */
const base64 = (chars: number): string => randomBytes(Math.ceil(chars * 0.75) + 3).toString('base64').slice(0, chars);

function expectCount(n: number): void {
  expect(Number.isSafeInteger(n)).toBe(true);
  expect(n).toBeGreaterThan(0);
}

describe('pool observability', () => {
  it('reports each pooled count\'s duration and the counts in flight', async () => {
    const seen: number[] = [];
    const c = createTokenCounter(parseTokenizerSettings({ ROUTER_TOKENIZER_INLINE_MAX_CHARS: '100', ROUTER_TOKENIZER_BUDGET_MS: '10000' }),
      { poolFile, onPoolTask: (ms) => seen.push(ms) });
    counters.push(c);
    await c.ready();
    c.countRequest({ prompt: prose(50) }, 'completions'); // inline: not a pool task
    const pending = c.countRequest({ prompt: prose(500) }, 'completions');
    expect(c.poolInFlight).toBe(1);
    await pending;
    expect(c.poolInFlight).toBe(0);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toBeGreaterThanOrEqual(0);
  });
});

describe('inline versus pool', () => {
  it('counts prompts up to the threshold inline (a number) and longer ones in the pool (a Promise)', async () => {
    const c = await readyCounter({});
    const small = c.countRequest({ prompt: prose(100) }, 'completions');
    expect(typeof small).toBe('number');
    expect(small).toBe(encode(prose(100)).length);
    const large = c.countRequest({ prompt: prose(101) }, 'completions');
    expect(large).toBeInstanceOf(Promise);
    expect(await large).toBe(encode(prose(101)).length);
    expect(c.stats).toEqual({ inline: 1, pooled: 1, fallbacks: 0, cacheHits: 0, cacheMisses: 2, cacheJoins: 0 });
  });

  it('gives the same count for a chat pooled as inline (framing and token ids added on return)', async () => {
    const body = {
      messages: [{ role: 'system', content: prose(3000) }, { role: 'user', content: [{ type: 'text', text: prose(500) }] }],
    };
    const inline = counter({ ROUTER_TOKENIZER_INLINE_MAX_CHARS: '100000', ROUTER_TOKENIZER_POOL_SIZE: '0' });
    const pooled = await readyCounter({});
    const expected = inline.countRequest(body, 'chat');
    expect(typeof expected).toBe('number');
    expect(await pooled.countRequest(body, 'chat')).toBe(expected);
    expect(await pooled.countRequest({ prompt: [prose(300), [1, 2, 3]] }, 'completions')).toBe(encode(prose(300)).length + 3);
    expect(await pooled.countText(prose(5000))).toBe(encode(prose(5000)).length);
    expect(pooled.stats.pooled).toBe(3);
  });

  it('uses the chars estimate above the threshold when there is no pool', () => {
    const c = counter({ ROUTER_TOKENIZER_POOL_SIZE: '0' });
    expect(c.countRequest({ prompt: 'x'.repeat(1000) }, 'completions')).toBe(250);
    expect(c.stats).toEqual({ inline: 0, pooled: 0, fallbacks: 1, cacheHits: 0, cacheMisses: 1, cacheJoins: 0 });
  });
});

describe('bounded queue', () => {
  it('falls back to the chars estimate at once when every thread is busy and the queue is full', async () => {
    const c = await readyCounter({ ROUTER_TOKENIZER_POOL_SIZE: '1', ROUTER_TOKENIZER_QUEUE: '1' });
    // Three different texts: a text another request's count is counting is waited for, not queued again.
    const [ta, tb, tc] = ['A', 'B', 'C'].map((first) => `${first}${prose(1999)}`);
    const a = c.countRequest({ prompt: ta }, 'completions');
    const b = c.countRequest({ prompt: tb }, 'completions');
    const overflow = c.countRequest({ prompt: tc }, 'completions');
    expect(a).toBeInstanceOf(Promise);
    expect(b).toBeInstanceOf(Promise);
    expect(overflow).toBe(500);
    expect(c.stats).toEqual({ inline: 0, pooled: 2, fallbacks: 1, cacheHits: 0, cacheMisses: 3, cacheJoins: 0 });
    expect(await a).toBe(encode(ta).length);
    expect(await b).toBe(encode(tb).length);
    // Capacity is given back when tasks finish.
    expect(await c.countRequest({ prompt: prose(2000) }, 'completions')).toBe(encode(prose(2000)).length);
  });
});

describe('hostile prompts', () => {
  it('counts 200 KB of one letter in the pool in bounded pieces (no 25 s stall)', async () => {
    const c = await readyCounter({ ROUTER_TOKENIZER_BUDGET_MS: '5000' });
    const pending = c.countRequest({ prompt: 'a'.repeat(200_000) }, 'completions');
    expect(pending).toBeInstanceOf(Promise);
    const n = await pending;
    expectCount(n);
    expect(c.stats.pooled).toBe(1);
    // Bounded pieces of 256 'a' are 32 tokens each; a budget fallback would give 50 000.
    expect(n).toBe(25_000);
  });

  it.each([
    ['200 KB of random base64', () => base64(200_000)],
    ['200 KB of spaces', () => ' '.repeat(200_000)],
    ['200 KB of one emoji', () => '🙂'.repeat(100_000)],
  ])('%s: pooled, answered with a finite count, bpe or a counted chars fallback', async (_label, make) => {
    const c = await readyCounter({});
    const prompt = make();
    const pending = c.countRequest({ prompt }, 'completions');
    expect(pending).toBeInstanceOf(Promise);
    const n = await pending;
    expectCount(n);
    expect(c.stats.pooled).toBe(1);
    if (c.stats.fallbacks === 1) expect(n).toBe(Math.ceil(prompt.length / 4));
    else expect(c.stats.fallbacks).toBe(0);
  });

  it('stops counting at the budget, falls back to chars, and leaves the thread free for the next prompt', async () => {
    // 16 MB of random base64 needs seconds of BPE (4 MB took 0.75 s on a slow hour of the 2-CPU
    // machine); the budget is 300 ms, ample for the normal prompt below on a loaded machine.
    const c = await readyCounter({ ROUTER_TOKENIZER_POOL_SIZE: '1', ROUTER_TOKENIZER_QUEUE: '4', ROUTER_TOKENIZER_BUDGET_MS: '300' });
    const hostile = Array.from({ length: 3 }, () => base64(16_000_000));
    const results = await Promise.all(hostile.map((prompt) => c.countRequest({ prompt }, 'completions')));
    expect(results).toEqual(hostile.map((p) => Math.ceil(p.length / 4)));
    expect(c.stats).toEqual({ inline: 0, pooled: 3, fallbacks: 3, cacheHits: 0, cacheMisses: 3, cacheJoins: 0 });
    // The thread stopped cooperatively (not killed and reloading): a normal prompt is counted
    // exactly. It takes a few ms; a machine loaded enough to hold the thread off the CPU for the
    // whole 300 ms budget makes it fall back too (counted), so it gets three tries. A thread still
    // busy with a hostile prompt, or gone, never counts it.
    const exact = encode(prose(3000)).length;
    let counted = 0;
    for (let i = 0; i < 3 && counted !== exact; i++) counted = await c.countRequest({ prompt: prose(3000) }, 'completions');
    expect(counted).toBe(exact);
    expect(c.stats.fallbacks).toBeGreaterThanOrEqual(3);
  });

  it('a thread that never answers: the count falls back at the budget', async () => {
    const c = counter({ ROUTER_TOKENIZER_BUDGET_MS: '50' }, hangingTaskFile());
    const n = await c.countRequest({ prompt: prose(1000) }, 'completions');
    expect(n).toBe(250);
    expect(c.stats).toEqual({ inline: 0, pooled: 1, fallbacks: 1, cacheHits: 0, cacheMisses: 1, cacheJoins: 0 });
  });

  it('a worker file that does not load neither crashes the process nor hangs the count', async () => {
    const c = counter({ ROUTER_TOKENIZER_BUDGET_MS: '50' }, `${poolFile}.missing.js`);
    await expect(c.ready()).rejects.toThrow();
    expect(await c.countRequest({ prompt: prose(1000) }, 'completions')).toBe(250);
    expect(c.stats.fallbacks).toBe(1);
  });
});
