/**
 * npm 11 skips dependencies' install scripts unless package.json's `allowScripts` names them, and
 * ends `npm ci` with a warning listing those not named. Every installed package with an install
 * script (or a binding.gyp, which npm builds with an implicit `node-gyp rebuild`) must be named,
 * so a new user's `npm ci` is clean; a package denied its script must still load (it ships
 * prebuilt binaries), or denying it would break the router.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { expect, test } from 'vitest';

const ROOT = new URL('../../../', import.meta.url).pathname;
const PKG = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const SCRIPT_NAMES = ['preinstall', 'install', 'postinstall'];

interface Scripted { name: string; dir: string }

/** Installed packages under `modules` (scoped and nested ones too) that npm would run a script for. */
function scripted(modules: string, out: Scripted[] = []): Scripted[] {
  if (!existsSync(modules)) return out;
  for (const entry of readdirSync(modules)) {
    if (entry.startsWith('.')) continue;
    const path = join(modules, entry);
    if (entry.startsWith('@')) {
      for (const sub of readdirSync(path)) visit(join(path, sub), out);
    } else {
      visit(path, out);
    }
  }
  return out;
}

function visit(dir: string, out: Scripted[]): void {
  const file = join(dir, 'package.json');
  if (!existsSync(file)) return;
  const pkg = JSON.parse(readFileSync(file, 'utf8'));
  const scripts = pkg.scripts ?? {};
  if (SCRIPT_NAMES.some((s) => typeof scripts[s] === 'string') || existsSync(join(dir, 'binding.gyp'))) {
    out.push({ name: pkg.name, dir });
  }
  scripted(join(dir, 'node_modules'), out);
}

test('every installed package with an install script is named in allowScripts', () => {
  const allow: Record<string, boolean> = PKG.allowScripts ?? {};
  const found = scripted(join(ROOT, 'node_modules'));
  expect(found.length).toBeGreaterThan(0);
  const missing = [...new Set(found.map((p) => p.name))].filter((n) => !(n in allow));
  expect(missing).toEqual([]);
});

test('a package denied its install script still loads from its prebuilt binaries', () => {
  const allow: Record<string, boolean> = PKG.allowScripts ?? {};
  const denied = Object.keys(allow).filter((n) => allow[n] === false);
  expect(denied.length).toBeGreaterThan(0);
  const found = scripted(join(ROOT, 'node_modules'));
  for (const name of denied) {
    const dirs = found.filter((p) => p.name === name).map((p) => p.dir);
    expect(dirs.length, `${name} is not installed`).toBeGreaterThan(0);
    for (const dir of dirs) {
      const load = createRequire(join(dir, 'package.json'));
      expect(() => load(dir), `${dir} does not load without its install script`).not.toThrow();
    }
  }
});
