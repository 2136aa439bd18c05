/**
 * How the primary cuts a scrape's text into the parts it sends the worker (metrics-cluster.ts
 * partEnd): each part ends with a line and has at least the part size, but the last; together they
 * are the text.
 */
import { describe, expect, it } from 'vitest';
import { partEnd } from '../../../src/observe/metrics-cluster.js';
import { mulberry32 } from '../../helpers/mulberry32.js';

function parts(text: string, partChars: number): string[] {
  const out: string[] = [];
  for (let from = 0; from < text.length;) {
    const to = partEnd(text, from, partChars);
    expect(to).toBeGreaterThan(from);
    out.push(text.slice(from, to));
    from = to;
  }
  return out;
}

describe('partEnd: the parts of a metrics text', () => {
  it('are the text, each but the last ending a line at or past the part size', () => {
    const rand = mulberry32(7);
    for (let k = 0; k < 200; k++) {
      const lines = Array.from({ length: Math.floor(rand() * 40) }, () => 'x'.repeat(Math.floor(rand() * 30)));
      const text = lines.join('\n') + (rand() < 0.8 ? '\n' : '');
      const size = 1 + Math.floor(rand() * 60);
      const ps = parts(text, size);
      expect(ps.join('')).toBe(text);
      for (const p of ps.slice(0, -1)) {
        expect(p.endsWith('\n')).toBe(true);
        expect(p.length).toBeGreaterThanOrEqual(size);
        // Cut at the first line end at or past the size: none earlier in the part from there.
        expect(p.slice(size - 1, -1)).not.toContain('\n');
      }
    }
  });

  it('a text no longer than the part size is one part; a long last line ends the text', () => {
    expect(parts('a 1\nb 2\n', 8)).toEqual(['a 1\nb 2\n']);
    expect(parts('a 1\nb 2\n', 3)).toEqual(['a 1\n', 'b 2\n']);
    expect(parts('a 1\nbbbbbbbbbb', 3)).toEqual(['a 1\n', 'bbbbbbbbbb']);
    expect(parts('', 3)).toEqual([]);
  });
});
