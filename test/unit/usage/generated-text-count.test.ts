import { describe, expect, it } from 'vitest';
import { bpeCountText } from '../../../src/tokens/bpe-count.js';
import { createTokenCounter } from '../../../src/tokens/create-token-counter.js';
import { GeneratedTextCount, HOLD_CHARS } from '../../../src/usage/generated-text-count.js';
import { compiledTaskFile, removeCompiled } from '../tokens/compiled-task.js';

const bpe = { countText: bpeCountText, countPrompt: () => 0, close: async () => {} };

function pieces(n: number): string[] {
  const words = ['alpha', 'beta,', 'gamma.', '\nDelta', ' 42', 'epsilon!', '  zeta', 'éta', '日本語', '😀x'];
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push(`${i % 3 === 0 ? ' ' : ''}${words[(i * 7) % words.length]}${i % 5 === 0 ? '\n' : ' '}`);
  return out;
}

describe('GeneratedTextCount', () => {
  it('counts a long text in bounded slices exactly as the whole text counts', () => {
    const parts = pieces(60_000);
    const whole = parts.join('');
    expect(whole.length).toBeGreaterThan(3 * HOLD_CHARS);
    const g = new GeneratedTextCount(bpe);
    for (const p of parts) g.add(p);
    expect(g.maxHeld).toBeLessThanOrEqual(HOLD_CHARS + 20);
    expect(g.tokens()).toBe(bpeCountText(whole));
  });

  it('a text with no pre-token boundary is still held to about two slices', () => {
    const g = new GeneratedTextCount(bpe, 1000);
    for (let i = 0; i < 500; i++) g.add('x'.repeat(37));
    expect(g.maxHeld).toBeLessThanOrEqual(2000 + 37);
    const n = g.tokens() as number;
    const exact = bpeCountText('x'.repeat(500 * 37));
    expect(Math.abs(n - exact)).toBeLessThanOrEqual(500 * 37 / 1000);
  });

  it('stops holding text once the stream reported its output count', () => {
    const g = new GeneratedTextCount(bpe);
    g.add('some text');
    g.stop();
    g.add('more');
    expect(g.heldChars).toBe(0);
    expect(g.tokens()).toBe(0);
  });

  it('adds the tokens estimated for text not read to those of the text it read; a reported count drops them', () => {
    const g = new GeneratedTextCount(bpe);
    g.add(' hello world');
    g.uncounted(40);
    g.uncounted(2);
    expect(g.tokens()).toBe(bpeCountText(' hello world') + 42);
    expect(g.estimatedTokens).toBe(42);
    const s = new GeneratedTextCount(bpe);
    s.uncounted(5);
    s.stop();
    s.uncounted(3);
    expect(s.tokens()).toBe(0);
  });

  it('waits for slices counted in the tokenizer pool', async () => {
    const counter = createTokenCounter({ estimator: 'bpe', inlineMaxChars: 100, poolSize: 1, queue: 100, budgetMs: 10_000, cacheChars: 0, parseMinBytes: 0, conversationBytes: 0 }, { poolFile: compiledTaskFile() });
    await counter.ready();
    try {
      const parts = pieces(20_000);
      const g = new GeneratedTextCount(counter, 4096);
      for (const p of parts) g.add(p);
      const n = g.tokens();
      expect(n).toBeInstanceOf(Promise);
      expect(await n).toBe(bpeCountText(parts.join('')));
    } finally {
      await counter.close();
      removeCompiled();
    }
  }, 30_000);
});
