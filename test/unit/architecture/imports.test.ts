/**
 * Imports point down the layers: a file of src/ may import its own part or a part below it in
 * LAYERS, never one above. A new top-level folder or file of src/ must be placed in LAYERS. No
 * files import each other in a loop, type-only imports included.
 */
import { readFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sourceFiles } from '../../helpers/source-files.js';

const SRC = resolve(new URL('../../../src', import.meta.url).pathname);

/** Bottom first. Parts on one line are peers: they must not import each other. */
export const LAYERS: readonly (readonly string[])[] = [
  ['errors.ts', 'clock.ts', 'timers.ts', 'interval-ticker.ts', 'build-info.ts', 'decimal-digits.ts', 'turn-queue.ts', 'two-generations.ts', 'header-name.ts', 'ascii-text.ts', 'byte-view.ts', 'setting-message.ts', 'open-file-limit.ts'],
  ['turn-end.ts'],
  ['body-memory.ts'],
  ['tokens'],
  ['config'],
  ['api'],
  ['ratelimit'],
  ['http'],
  ['observe'],
  ['auth'],
  ['usage'],
  ['upstream'],
  ['route'],
  ['pick'],
  ['settings.ts', 'process-failure.ts', 'process-warnings.ts'],
  ['primary'],
  ['worker'],
  ['cli.ts', 'healthcheck.ts'],
];

/** Inside a part: sub-folders that must not import each other (siblings behind a shared root). */
const SIBLINGS: readonly (readonly string[])[] = [['ratelimit/local', 'ratelimit/redis']];

interface Import { from: string; to: string; line: string }

/** Relative imports of src/ (static, re-exports and dynamic), resolved to paths under src/. */
export function srcImports(): Import[] {
  const out: Import[] = [];
  for (const file of sourceFiles(SRC)) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|^import\s+)'(\.{1,2}\/[^']+)'/gm)) {
      out.push({ from: relative(SRC, file), to: relative(SRC, resolve(dirname(file), m[1]).replace(/\.js$/, '.ts')), line: m[0] });
    }
  }
  return out;
}

function partOf(path: string): string {
  const slash = path.indexOf('/');
  return slash === -1 ? path : path.slice(0, slash);
}

function rankOf(part: string): number {
  return LAYERS.findIndex((layer) => layer.includes(part));
}

/** Imports that point up or sideways between parts, or across sibling sub-folders. */
export function violations(imports: readonly Pick<Import, 'from' | 'to'>[]): string[] {
  const inside = (p: string, dir: string) => p.startsWith(`${dir}/`);
  return imports
    .filter((i) => (partOf(i.from) !== partOf(i.to) && rankOf(partOf(i.to)) >= rankOf(partOf(i.from)))
      || SIBLINGS.some((group) => group.some((a) => inside(i.from, a)) && group.some((b) => inside(i.to, b) && !inside(i.from, b))))
    .map((i) => `${i.from} -> ${i.to}`);
}

/** Files that import each other in a loop (type-only imports included), each circle as its files sorted. */
export function circles(imports: readonly Pick<Import, 'from' | 'to'>[]): string[][] {
  const next = new Map<string, string[]>();
  for (const i of imports) next.set(i.from, [...(next.get(i.from) ?? []), i.to]);
  // Tarjan's strongly connected components: a component of more than one file is a circle.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (next.get(v) ?? []).includes(v)) found.push(component.sort());
  };
  for (const v of next.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe('the layers of src/', () => {
  const imports = srcImports();

  it('finds the imports it checks', () => {
    expect(imports.length).toBeGreaterThan(100);
    expect(imports.some((i) => i.from === 'worker/pipeline.ts' && i.to.startsWith('route/'))).toBe(true);
  });

  it('places every top-level folder and file of src/ in a layer', () => {
    const parts = new Set(sourceFiles(SRC).map((f) => partOf(relative(SRC, f))));
    const unplaced = [...parts].filter((p) => rankOf(p) === -1);
    expect(unplaced, 'add these to LAYERS in test/unit/architecture/imports.test.ts').toEqual([]);
  });

  it('has no import that points up, sideways between peers, or across sibling sub-folders', () => {
    expect(violations(imports)).toEqual([]);
  });

  it('has no circle of imports between files, type-only imports included', () => {
    expect(circles(imports)).toEqual([]);
  });

  it('the circle check itself: finds a loop of two and one of three, not a chain', () => {
    expect(circles([
      { from: 'upstream/http1/connection.ts', to: 'upstream/http1/request.ts' },
      { from: 'upstream/http1/request.ts', to: 'upstream/http1/connection.ts' },
      { from: 'a.ts', to: 'b.ts' },
      { from: 'b.ts', to: 'c.ts' },
      { from: 'c.ts', to: 'a.ts' },
      { from: 'c.ts', to: 'd.ts' },
      { from: 'd.ts', to: 'e.ts' },
    ]).sort()).toEqual([
      ['a.ts', 'b.ts', 'c.ts'],
      ['upstream/http1/connection.ts', 'upstream/http1/request.ts'],
    ]);
  });

  it('the check itself: flags an upward, a peer and a sibling import, passes a downward one', () => {
    expect(violations([
      { from: 'config/resources.ts', to: 'worker/pipeline.ts' },
      { from: 'errors.ts', to: 'clock.ts' },
      { from: 'ratelimit/local/lease-book.ts', to: 'ratelimit/redis/batch.ts' },
      { from: 'worker/pipeline.ts', to: 'route/route-table.ts' },
      { from: 'ratelimit/local/lease-book.ts', to: 'ratelimit/windows.ts' },
    ])).toEqual([
      'config/resources.ts -> worker/pipeline.ts',
      'errors.ts -> clock.ts',
      'ratelimit/local/lease-book.ts -> ratelimit/redis/batch.ts',
    ]);
  });
});
