import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The operational log's events table (docs/configuration.md, "Operational log") names every event
 * the sources log, and only those: an operator filtering by event finds each one described.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

/** The TypeScript files under `dir`, at any depth. */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts')).map((f) => join(dir, f));
}

/** Events named in calls of the log: `ops.warn('event', …)`, `ops[level]('event', …)`, `this.line('warn', 'event', …)`. */
function loggedEvents(text: string): string[] {
  const found = new Set<string>();
  for (const re of [/(?:\.(?:info|warn|error)|\[level\])\('([a-z][a-z-]*)', /g, /\.line\('(?:info|warn|error)', '([a-z][a-z-]*)'/g]) {
    for (const m of text.matchAll(re)) found.add(m[1]!);
  }
  return [...found];
}

/** The event names of the table's first column (a cell may name several: `drain`, `exit`). */
function documentedEvents(markdown: string): string[] {
  const start = markdown.indexOf('## Operational log');
  const section = markdown.slice(start, markdown.indexOf('\n## ', start + 1));
  const names: string[] = [];
  for (const line of section.split('\n')) {
    const cell = /^\| ([^|]+) \|/.exec(line)?.[1];
    if (cell === undefined || cell === 'event' || /^-+$/.test(cell)) continue;
    for (const m of cell.matchAll(/`([a-z][a-z-]*)`/g)) names.push(m[1]!);
  }
  return names;
}

describe('operational log events', () => {
  const logged = [...new Set(sourceFiles(join(ROOT, 'src')).flatMap((f) => loggedEvents(readFileSync(f, 'utf8'))))].sort();
  const documented = [...new Set(documentedEvents(readFileSync(join(ROOT, 'docs/configuration.md'), 'utf8')))].sort();

  it('the readers find what they look for', () => {
    expect(loggedEvents("ops.warn('tls', m); ops[level]('scheduler', m); this.line('warn', 'ops-log', x); log.info('x')")).toEqual(['tls', 'scheduler', 'ops-log']);
    expect(documentedEvents('## Operational log\n\n| event | when |\n|---|---|\n| `drain`, `exit` | … `info` … |\n| `tls` | x |\n\n## Next\n| `no` | y |'))
      .toEqual(['drain', 'exit', 'tls']);
    expect(logged.length).toBeGreaterThan(15);
  });

  it('every event the sources log is in the table of docs/configuration.md, and the table names no other', () => {
    expect(documented).toEqual(logged);
  });
});
