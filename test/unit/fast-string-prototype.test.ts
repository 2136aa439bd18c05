/**
 * keepStringPrototypeFast() in a child Node with --allow-natives-syntax (%HasFastProperties is
 * V8's own check): after ioredis has loaded (its `class VerbatimString extends String` puts
 * String.prototype into dictionary mode), the call brings String.prototype back to fast
 * properties, and a later `extends String` leaves it fast; without the call it stays slow.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { transpileDir } from '../helpers/transpile.js';
import { tempDir } from '../helpers/processes.js';

const ROOT = new URL('../../', import.meta.url).pathname;

function probe(fix: boolean): { loaded: boolean; fixed: boolean; laterSubclass: boolean } {
  const dir = transpileDir(join(ROOT, 'src'), tempDir('ir-fast-proto-'), ['fast-string-prototype']);
  const script = `
    const fast = new Function('o', 'return %HasFastProperties(o)');
    await import('ioredis');
    const loaded = fast(String.prototype);
    ${fix ? `(await import(${JSON.stringify(join(dir, 'fast-string-prototype.js'))})).keepStringPrototypeFast();` : ''}
    const fixed = fast(String.prototype);
    class Later extends String {}
    void Later;
    console.log(JSON.stringify({ loaded, fixed, laterSubclass: fast(String.prototype) }));
  `;
  const out = execFileSync(process.execPath, ['--allow-natives-syntax', '--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' });
  return JSON.parse(out.trim().split('\n').pop()!);
}

test('String.prototype has fast properties after ioredis loads and the call, and keeps them', () => {
  const r = probe(true);
  expect(r.fixed).toBe(true);
  expect(r.laterSubclass).toBe(true);
});

test('without the call, loading ioredis leaves String.prototype slow, and a later subclass does not repair it', () => {
  // The reason the call exists (Node 20 and 24 alike). Should a later ioredis or V8 stop doing
  // this, this fails and keepStringPrototypeFast can go.
  const r = probe(false);
  expect(r.loaded).toBe(false);
  expect(r.laterSubclass).toBe(false);
});
