/**
 * `npm ci --omit=dev` must give a router that runs: every package src/ imports is a runtime
 * dependency in package.json (or a node: built-in), never a development one.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = new URL('../../../', import.meta.url).pathname;
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? sourceFiles(p) : name.endsWith('.ts') ? [p] : [];
  });
}

/** Package name of a bare specifier ('@scope/name/sub' -> '@scope/name'), null for relative or built-in. */
export function packageOf(spec: string): string | null {
  if (spec.startsWith('.') || spec.startsWith('node:') || builtinModules.includes(spec)) return null;
  const parts = spec.split('/');
  return spec.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
}

describe('runtime dependencies of src/', () => {
  it('reads a package name from a specifier', () => {
    expect(packageOf('@kubernetes/client-node')).toBe('@kubernetes/client-node');
    expect(packageOf('gpt-tokenizer/encoding/o200k_base')).toBe('gpt-tokenizer');
    expect(packageOf('node:fs')).toBeNull();
    expect(packageOf('./x.js')).toBeNull();
  });

  it('every package imported by src/ (value imports, not `import type`) is in dependencies', () => {
    const missing = new Set<string>();
    for (const file of sourceFiles(join(ROOT, 'src'))) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/^(import(?!\s+type\b)[^'"]*from\s*|import\s*\(\s*|export[^'"]*from\s*)['"]([^'"]+)['"]/gm)) {
        const name = packageOf(m[2]);
        if (name !== null && !(name in pkg.dependencies)) missing.add(`${name} (${file.slice(ROOT.length)})`);
      }
    }
    expect([...missing]).toEqual([]);
  });
});
