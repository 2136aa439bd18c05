/**
 * `performance` and `Buffer` are accessor properties of Node's global object: optimised code that
 * names the global calls V8's global load IC and the getter on every use (about 150 instructions
 * under callgrind, where the imported binding is a plain load). The hot path uses them many times
 * per request, so every file of src/ that uses either as a value imports it from its module.
 */
import { readFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sourceFiles } from '../../helpers/source-files.js';

const SRC = resolve(new URL('../../../src', import.meta.url).pathname);

const GLOBALS: readonly { name: string; module: string; use: RegExp }[] = [
  { name: 'performance', module: 'node:perf_hooks', use: /(^|[^.\w])performance\./ },
  { name: 'Buffer', module: 'node:buffer', use: /(^|[^.\w])Buffer\.|instanceof Buffer\b|new Buffer\b/ },
];

/** The file's code without its comments (a use named in a comment is no use). */
function codeOf(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

/** The globals `text` uses as values without importing them. */
export function unimportedGlobals(text: string): string[] {
  const code = codeOf(text);
  return GLOBALS.filter((g) => g.use.test(code)
    && !new RegExp(`import \\{[^}]*\\b${g.name}\\b[^}]*\\} from '${g.module}'`).test(code)).map((g) => g.name);
}

describe('Node globals that are accessors', () => {
  it('finds a use without its import, and none in comments or with the import', () => {
    expect(unimportedGlobals('const t = performance.now();')).toEqual(['performance']);
    expect(unimportedGlobals('x = Buffer.from("a");\nif (y instanceof Buffer) z();')).toEqual(['Buffer']);
    expect(unimportedGlobals("import { performance } from 'node:perf_hooks';\nconst t = performance.now();")).toEqual([]);
    expect(unimportedGlobals("import { Buffer } from 'node:buffer';\nBuffer.alloc(1);")).toEqual([]);
    expect(unimportedGlobals('/** Buffer.from copies */\n// performance.now() is dear\nconst b: Buffer = x;')).toEqual([]);
    expect(unimportedGlobals('const t = this.performance.now() + my.Buffer.length;')).toEqual([]);
  });

  it('every file of src/ imports performance and Buffer where it uses them', () => {
    const missing: string[] = [];
    for (const file of sourceFiles(SRC)) {
      for (const name of unimportedGlobals(readFileSync(file, 'utf8'))) missing.push(`${relative(SRC, file)}: ${name}`);
    }
    expect(missing).toEqual([]);
  });
});
