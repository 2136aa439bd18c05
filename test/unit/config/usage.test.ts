import { describe, expect, it } from 'vitest';
import { USAGE } from '../../../src/config/usage.js';

/** The lines of --help from the one starting with `start` up to the next empty line. */
function section(start: string): string[] {
  const lines = USAGE.split('\n');
  const from = lines.findIndex((l) => l.startsWith(start)) + 1;
  const to = lines.indexOf('', from);
  return lines.slice(from, to === -1 ? undefined : to);
}

describe('--help', () => {
  it('starts every description of the environment section at one column, the longest name\'s plus two spaces', () => {
    const lines = section('Environment');
    expect(lines.length).toBeGreaterThan(40);
    const names = lines.flatMap((l) => /^ {2}([A-Z][A-Z0-9_]*) /.exec(l)?.[1] ?? []);
    expect(names).toContain('ROUTER_OUTLIER_BASE_EJECTION');
    expect(names).toContain('ROUTER_TOKENIZER_BUDGET_MS');
    expect(names).toContain('RATE_LIMIT_REDIS_FAILURE_MODE');
    const column = 2 + Math.max(...names.map((n) => n.length)) + 2;
    for (const line of lines) {
      if (/^ [A-Z][a-z]/.test(line)) continue; // a group's title
      // A variable then its description, or the description's next line: the text after the name starts at the column.
      const lead = /^(?: {2}[A-Z][A-Z0-9_]* +| +)(?=\S)/.exec(line);
      expect(lead?.[0].length, JSON.stringify(line)).toBe(column);
    }
  });

  it('aligns the options\' descriptions and their environment equivalents', () => {
    const lines = section('Options');
    const descriptions = lines.map((l) => /^ {2}\S+(?: [A-Z]+)? +/.exec(l)![0].length);
    expect(new Set(descriptions).size).toBe(1);
    const brackets = lines.filter((l) => l.endsWith(']')).map((l) => l.lastIndexOf(' [') + 1);
    expect(brackets.length).toBe(5);
    expect(new Set(brackets).size).toBe(1);
  });
});
