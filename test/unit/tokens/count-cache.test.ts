import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { CACHE_MIN_CHARS, ENTRY_OVERHEAD_CHARS, fingerprint, NOT_CACHED, TextCountCache } from '../../../src/tokens/count-cache.js';
import { parseTokenizerSettings } from '../../../src/tokens/tokenizer-settings.js';
import { compiledTaskFile, hangingTaskFile, removeCompiled } from './compiled-task.js';
import { mulberry32 } from '../../helpers/mulberry32.js';
import { createTokenCounter, type RouterTokenCounter } from './request-counter.js';

const text = (ch: string, n = CACHE_MIN_CHARS): string => ch.repeat(n);
/** What a text of CACHE_MIN_CHARS is charged against the budget. */
const ENTRY = CACHE_MIN_CHARS + ENTRY_OVERHEAD_CHARS;

describe('TextCountCache', () => {
  it('keeps counts and answers NOT_CACHED for texts it does not hold', () => {
    const c = new TextCountCache(10_000);
    expect(c.get(text('a'))).toBe(NOT_CACHED);
    c.set(text('a'), 32);
    expect(c.get(text('a'))).toBe(32);
    // The same text as another string object: looked up by its characters.
    expect(c.get(['a'.repeat(30), 'a'.repeat(CACHE_MIN_CHARS - 30)].join(''))).toBe(32);
    expect(c.chars).toBe(ENTRY);
  });

  it('holds at most its budget in two generations: a text used once leaves after two, one in use stays', () => {
    // Generations of 2 texts of CACHE_MIN_CHARS each.
    const c = new TextCountCache(4 * ENTRY);
    c.set(text('a'), 1);
    c.set(text('b'), 2);
    c.set(text('c'), 3); // current full: a, b become the previous generation
    expect(c.chars).toBe(3 * ENTRY);
    expect(c.get(text('a'))).toBe(1); // moved into the current generation (c, a)
    c.set(text('d'), 4); // current full again: (c, a) previous, b dropped
    expect(c.get(text('b'))).toBe(NOT_CACHED);
    expect(c.get(text('a'))).toBe(1);
    expect(c.get(text('c'))).toBe(3);
    expect(c.get(text('d'))).toBe(4);
    expect(c.chars).toBe(3 * ENTRY);
  });

  it('two texts of one fingerprint take each other\'s place and never answer for each other', () => {
    const one = 'a'.repeat(1000);
    const other = `a${'b'}${'a'.repeat(998)}`; // differs at a character the fingerprint does not read
    expect(other).not.toBe(one);
    expect(fingerprint(other)).toBe(fingerprint(one));
    const c = new TextCountCache(100_000);
    c.set(one, 10);
    expect(c.get(other)).toBe(NOT_CACHED);
    c.set(other, 11);
    expect(c.get(one)).toBe(NOT_CACHED);
    expect(c.get(other)).toBe(11);
    expect(c.chars).toBe(1000 + ENTRY_OVERHEAD_CHARS);
    // Texts that differ where it reads have other fingerprints.
    expect(fingerprint(`b${'a'.repeat(999)}`)).not.toBe(fingerprint(one));
    expect(fingerprint(`${'a'.repeat(999)}b`)).not.toBe(fingerprint(one));
    expect(fingerprint('a'.repeat(1001))).not.toBe(fingerprint(one));
  });

  it('under random use: never over its budget, and a count found is always the one kept for that exact text', () => {
    const random = mulberry32(13);
    const budget = 40_000;
    const c = new TextCountCache(budget);
    // 300 texts, many alike: same length, one character apart (often at a place the fingerprint
    // does not read), so that fingerprints collide.
    const base = 'x'.repeat(2_000);
    const texts = Array.from({ length: 300 }, (_, i) => {
      const len = CACHE_MIN_CHARS + Math.floor(random() * 1_500);
      const at = Math.floor(random() * len);
      return `${base.slice(0, at)}${String.fromCharCode(97 + (i % 26))}${base.slice(at + 1, len)}`;
    });
    const kept = new Map<string, number>();
    let hits = 0;
    for (let step = 0; step < 20_000; step++) {
      const i = Math.floor(random() ** 2 * texts.length); // some texts far more used than others
      const t = texts[i];
      const n = c.get([t].join('')); // a copy, as a request brings it
      if (n === NOT_CACHED) {
        kept.set(t, 1_000 + i);
        c.set(t, 1_000 + i);
      } else {
        hits++;
        expect(n).toBe(kept.get(t));
      }
      expect(c.chars).toBeLessThanOrEqual(budget);
    }
    expect(hits).toBeGreaterThan(1_000);
  });

  it('fingerprints start from a secret of the process: another process files a text elsewhere', async () => {
    const t = text('a', 500);
    const seen = new Set<number>();
    for (let i = 0; i < 3; i++) {
      vi.resetModules();
      const fresh = await import('../../../src/tokens/count-cache.js');
      seen.add(fresh.fingerprint(t));
    }
    expect(seen.size).toBe(3);
  });

  it('does not keep a text longer than a generation', () => {
    const c = new TextCountCache(2 * ENTRY);
    c.set(text('a', CACHE_MIN_CHARS + 1), 5);
    expect(c.get(text('a', CACHE_MIN_CHARS + 1))).toBe(NOT_CACHED);
    expect(c.chars).toBe(0);
  });
});

let poolFile = '';
beforeAll(() => { poolFile = compiledTaskFile(); });
afterAll(removeCompiled);
const counters: RouterTokenCounter[] = [];
afterEach(async () => { await Promise.all(counters.splice(0).map((c) => c.close())); });

function counter(env: NodeJS.ProcessEnv): RouterTokenCounter {
  const c = createTokenCounter(parseTokenizerSettings({ ROUTER_TOKENIZER_BUDGET_MS: '10000', ...env }), { poolFile });
  counters.push(c);
  return c;
}

/** The reference: no cache, every prompt counted inline (a number), so that counts can be compared at once. */
function referenceCounter(): RouterTokenCounter {
  return counter({ ROUTER_TOKENIZER_CACHE_CHARS: '0', ROUTER_TOKENIZER_POOL_SIZE: '0', ROUTER_TOKENIZER_INLINE_MAX_CHARS: '100000' });
}

const SENTENCE = 'You are a helpful assistant. Answer in the language of the question, cite your sources. ';
const prose = (chars: number): string => SENTENCE.repeat(Math.ceil(chars / SENTENCE.length)).slice(0, chars);
const tools = JSON.stringify(Array.from({ length: 6 }, (_, i) => ({
  type: 'function',
  function: { name: `tool_${i}`, description: `Looks up item ${i} in the catalogue.`, parameters: { type: 'object', properties: { id: { type: 'string' } } } },
})));

function agentTurn(system: string, question: string): Record<string, unknown> {
  return { messages: [{ role: 'system', content: system }, { role: 'user', content: question }], tools: JSON.parse(tools) };
}

describe('token counter with the cache of repeated texts', () => {
  it('gives the counts of a counter without the cache, for prose, base64, other scripts and chats', async () => {
    const cached = counter({});
    await cached.ready();
    const plain = counter({ ROUTER_TOKENIZER_CACHE_CHARS: '0' });
    await plain.ready();
    const texts = [
      prose(300), prose(5_000), randomBytes(3_000).toString('base64'),
      'Привет, как дела? 你好，世界。🙂 '.repeat(40), 'a'.repeat(2_000), ' '.repeat(700),
    ];
    for (const t of texts) {
      for (let round = 0; round < 3; round++) {
        // The counter without the cache is the reference (itself tested against gpt-tokenizer).
        const want = await plain.countRequest({ prompt: t }, 'completions');
        expect(await cached.countRequest({ prompt: t }, 'completions')).toBe(want);
        const chat = agentTurn(t, `question ${round}`);
        expect(await cached.countRequest(chat, 'chat')).toBe(await plain.countRequest(chat, 'chat'));
      }
    }
    expect(cached.stats.cacheHits).toBeGreaterThan(0);
    expect(plain.stats.cacheHits + plain.stats.cacheMisses).toBe(0);
  });

  it('counts a repeated system prompt and tool list once; later turns count only their new text, inline', async () => {
    const c = counter({});
    await c.ready();
    const system = prose(4_000);
    const first = c.countRequest(agentTurn(system, 'Where is my order?'), 'chat');
    expect(first).toBeInstanceOf(Promise); // 4 KB of new text: the tokenizer thread
    const plain = referenceCounter();
    const want = (q: string): number => plain.countRequest(agentTurn(system, q), 'chat') as number;
    expect(await first).toBe(want('Where is my order?'));
    expect(c.stats).toMatchObject({ pooled: 1, cacheHits: 0, cacheMisses: 2 }); // the system prompt and the tools' JSON
    // The next turn's new text is short: counted on the event loop, the rest from the cache.
    const second = c.countRequest(agentTurn(system, 'And when will it arrive?'), 'chat');
    expect(typeof second).toBe('number');
    expect(second).toBe(want('And when will it arrive?'));
    expect(c.stats).toMatchObject({ inline: 1, pooled: 1, cacheHits: 2, cacheMisses: 2 });
  });

  it('a long new text beside cached ones goes to the pool alone, and is kept', async () => {
    const c = counter({ ROUTER_TOKENIZER_INLINE_MAX_CHARS: '512' });
    await c.ready();
    const system = prose(2_000);
    await c.countRequest(agentTurn(system, 'q'), 'chat');
    const question = `${prose(900)} (attached)`;
    const pending = c.countRequest(agentTurn(system, question), 'chat');
    expect(pending).toBeInstanceOf(Promise);
    const plain = referenceCounter();
    expect(await pending).toBe(plain.countRequest(agentTurn(system, question), 'chat'));
    expect(c.stats).toMatchObject({ pooled: 2, cacheHits: 2, cacheMisses: 3 });
    expect(c.countRequest(agentTurn(system, question), 'chat')).toBe(plain.countRequest(agentTurn(system, question), 'chat'));
    expect(c.stats).toMatchObject({ inline: 1, pooled: 2, cacheHits: 5, cacheMisses: 3 });
  });

  it('a conversation\'s history: each turn counts only its new messages, however many came before', async () => {
    const c = counter({ ROUTER_TOKENIZER_INLINE_MAX_CHARS: '512' });
    await c.ready();
    const plain = referenceCounter();
    const messages: { role: string; content: string }[] = [];
    for (let turn = 0; turn < 20; turn++) {
      messages.push({ role: 'user', content: `Turn ${turn}: ${prose(80 + turn * 7)}` });
      const body = { messages: [...messages] };
      const before = { ...c.stats };
      const n = c.countRequest(body, 'chat');
      // The last turns carry over 5,000 characters of history and 39 roles (short texts, kept in
      // their own memo), far over the threshold; only the new messages are counted, on the event loop.
      expect(typeof n).toBe('number');
      expect(n).toBe(plain.countRequest(body, 'chat'));
      expect(c.stats.cacheHits - before.cacheHits).toBe(turn === 0 ? 0 : 2 * turn - 1);
      expect(c.stats.cacheMisses - before.cacheMisses).toBe(turn === 0 ? 1 : 2);
      messages.push({ role: 'assistant', content: `Answer ${turn}: ${prose(70 + turn * 5)}` });
    }
    expect(messages.slice(0, -1).reduce((a, m) => a + m.content.length, 0)).toBeGreaterThan(5_000);
    expect(c.stats.pooled).toBe(0);
  });

  it('a conversation of short messages only: from four messages on, each turn counts only its new ones', async () => {
    const c = counter({ ROUTER_TOKENIZER_INLINE_MAX_CHARS: '512' });
    await c.ready();
    const plain = referenceCounter();
    const messages: { role: string; content: string }[] = [];
    for (let turn = 0; turn < 20; turn++) {
      messages.push({ role: 'user', content: `Q${turn}: ${prose(20 + (turn % 5) * 8)}` });
      const body = { messages: [...messages] };
      const n = c.countRequest(body, 'chat');
      expect(typeof n).toBe('number');
      expect(n).toBe(plain.countRequest(body, 'chat'));
      messages.push({ role: 'assistant', content: `A${turn}: ${prose(30 + (turn % 4) * 6)}` });
    }
    const chars = messages.slice(0, -1).reduce((a, m) => a + m.content.length + m.role.length, 0);
    expect(chars).toBeGreaterThan(1_500); // the last turns are far over the threshold, all short texts
    expect(messages.every((m) => m.content.length < CACHE_MIN_CHARS)).toBe(true);
    expect(c.stats.pooled).toBe(0);
    expect(c.stats.cacheHits + c.stats.cacheMisses).toBe(0); // the memo of short texts alone
  });

  it('a burst of requests with the same new long texts waits for one count of them, each exact', async () => {
    const c = counter({});
    await c.ready();
    const system = prose(6_000);
    const questions = ['Where is my order?', 'When will it arrive?', 'Can I change the address?', 'Who carries it?', 'Is it insured?'];
    const pending = questions.map((q) => c.countRequest(agentTurn(system, q), 'chat'));
    for (const p of pending) expect(p).toBeInstanceOf(Promise);
    const plain = referenceCounter();
    const got = await Promise.all(pending);
    expect(got).toEqual(questions.map((q) => plain.countRequest(agentTurn(system, q), 'chat')));
    // The first sends the system prompt and the tools' JSON to the pool; the four others wait for
    // that count (their questions and roles counted inline), then the cache holds both.
    expect(c.stats).toMatchObject({ pooled: 1, cacheMisses: 2, cacheJoins: 8, inline: 4, fallbacks: 0 });
    expect(c.countRequest(agentTurn(system, 'And now?'), 'chat')).toBe(plain.countRequest(agentTurn(system, 'And now?'), 'chat'));
    expect(c.stats).toMatchObject({ pooled: 1, cacheHits: 2, cacheJoins: 8 });
  });

  it('a request waiting for another\'s count estimates the texts that count gave up on, as the fallback does', async () => {
    const c = createTokenCounter(parseTokenizerSettings({ ROUTER_TOKENIZER_BUDGET_MS: '100' }), { poolFile: hangingTaskFile() });
    counters.push(c);
    await c.ready();
    const long = prose(3_000);
    const first = c.countRequest({ prompt: long }, 'completions');
    const second = c.countRequest({ messages: [{ role: 'user', content: long }, { role: 'user', content: 'Summarize it.' }] }, 'chat');
    expect(c.stats).toMatchObject({ pooled: 1, cacheMisses: 1, cacheJoins: 1 });
    expect(await first).toBe(Math.ceil(long.length / 4));
    const plain = referenceCounter();
    // Its own texts counted (the question, the roles, the framing), the text in flight estimated.
    const own = (plain.countRequest({ messages: [{ role: 'user', content: '' }, { role: 'user', content: 'Summarize it.' }] }, 'chat') as number);
    expect(await second).toBe(own + Math.ceil(long.length / 4));
    // Nothing was kept, and nothing is in flight: the next request sends the text again.
    const third = c.countRequest({ prompt: long }, 'completions');
    expect(c.stats).toMatchObject({ pooled: 2, cacheMisses: 2, cacheJoins: 1, cacheHits: 0 });
    expect(await third).toBe(Math.ceil(long.length / 4));
  });

  it('keeps no count of a text the pool did not count (the chars estimate is not cached)', async () => {
    const c = counter({ ROUTER_TOKENIZER_POOL_SIZE: '0' });
    const long = prose(1_000);
    expect(c.countRequest({ prompt: long }, 'completions')).toBe(250);
    expect(c.countRequest({ prompt: long }, 'completions')).toBe(250);
    expect(c.stats).toMatchObject({ fallbacks: 2, cacheHits: 0, cacheMisses: 2 });
  });

  it('without a thread to count them, only the texts not kept get the chars estimate', () => {
    const c = counter({ ROUTER_TOKENIZER_POOL_SIZE: '0', ROUTER_TOKENIZER_INLINE_MAX_CHARS: '512' });
    const plain = referenceCounter();
    const system = prose(400);
    c.countRequest({ messages: [{ role: 'system', content: system }] }, 'chat'); // counted inline, kept
    const question = prose(600);
    const body = { messages: [{ role: 'system', content: system }, { role: 'user', content: question }] };
    const n = c.countRequest(body, 'chat');
    expect(c.stats).toMatchObject({ fallbacks: 1, cacheHits: 1 });
    // The kept counts of the system prompt and of its role, then ceil((question + its role + two
    // messages' framing) / 4).
    const kept = (plain.countRequest({ prompt: system }, 'completions') as number) + (plain.countRequest({ prompt: 'system' }, 'completions') as number);
    expect(n).toBe(kept + Math.ceil((question.length + 'user'.length + 2 * 24) / 4));
  });

  it('is off with ROUTER_TOKENIZER_CACHE_CHARS=0; short texts never go through it', async () => {
    const off = counter({ ROUTER_TOKENIZER_CACHE_CHARS: '0', ROUTER_TOKENIZER_INLINE_MAX_CHARS: '100000', ROUTER_TOKENIZER_POOL_SIZE: '0' });
    off.countRequest({ prompt: prose(1_000) }, 'completions');
    off.countRequest({ prompt: prose(1_000) }, 'completions');
    expect(off.stats).toMatchObject({ inline: 2, cacheHits: 0, cacheMisses: 0 });
    const on = counter({ ROUTER_TOKENIZER_POOL_SIZE: '0' });
    on.countRequest({ prompt: prose(CACHE_MIN_CHARS - 1) }, 'completions');
    on.countRequest({ prompt: prose(CACHE_MIN_CHARS - 1) }, 'completions');
    expect(on.stats).toMatchObject({ inline: 2, cacheHits: 0, cacheMisses: 0 });
  });
});
