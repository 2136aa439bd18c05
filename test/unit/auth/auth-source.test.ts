import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AuthConfigError } from '../../../src/auth/auth-config.js';
import { AuthSource, loadAuthConfigFile, startAuthSource } from '../../../src/auth/auth-source.js';
import { PARSE_IN_PLACE_CHARS } from '../../../src/config/parse-off-thread.js';
import { sha256Hex } from './jwks-server.js';

const dirs: string[] = [];
function file(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'ir-auth-'));
  dirs.push(dir);
  const f = join(dir, 'auth.yaml');
  writeFileSync(f, text);
  return f;
}
const keys = (...names: string[]) => `apiKeys:\n${names.map((n) => `  - { name: ${n}, sha256: "${sha256Hex(`key-${n}`)}" }`).join('\n')}\n`;
/** The key names of the config in use. */
const names = (s: AuthSource): string[] => s.config.apiKeys.map((k) => k.name);

afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('AuthSource', () => {
  it('refuses to start on an invalid file, naming it', () => {
    const f = file('apiKeys: [{ name: a }]');
    expect(() => new AuthSource(f, () => {}).start()).toThrow(AuthConfigError);
    expect(() => loadAuthConfigFile(f)).toThrow(`${f}: apiKeys[0].sha256: expected the hex sha256`);
    expect(() => loadAuthConfigFile(join(tmpdir(), 'no-such-auth.yaml'))).toThrow(/no-such-auth\.yaml: cannot read the auth file/);
  });

  it('swaps in a valid change and keeps the last good config on a bad one', async () => {
    const f = file(keys('a'));
    const logs: string[] = [];
    const levels: string[] = [];
    const s = new AuthSource(f, (m, level) => {
      logs.push(m);
      levels.push(level);
    });
    s.start();
    try {
      expect(names(s)).toContain('a');
      expect(names(s)).not.toContain('b');

      writeFileSync(f, keys('b'));
      expect(await s.reload()).toBe(true);
      expect(names(s)).not.toContain('a');
      expect(names(s)).toContain('b');

      writeFileSync(f, 'apiKeys: [{ name: c, sha256: nope }]');
      expect(await s.reload()).toBe(false);
      expect(s.rejected).toBe(1);
      expect(logs.at(-1)).toMatch(/auth reload rejected, keeping the last good config: .*auth\.yaml: apiKeys\[0\]\.sha256/);
      // A reload applied is information; one refused is a warning (a broken file in production).
      expect(levels.slice(-2)).toEqual(['info', 'warn']);
      expect(names(s)).toContain('b');

      rmSync(f);
      expect(await s.reload()).toBe(false);
      expect(s.rejected).toBe(2);
      expect(names(s)).toContain('b');
    } finally {
      s.stop();
    }
  });

  it('notices a change by polling the file', async () => {
    const f = file(keys('a'));
    const s = new AuthSource(f, () => {});
    s.start(20);
    try {
      writeFileSync(f, keys('a', 'b'));
      for (let i = 0; i < 400 && !names(s).includes('b'); i++) {
        await new Promise((r) => setTimeout(r, 10));
      }
      expect(names(s)).toContain('b');
    } finally {
      s.stop();
    }
  });

  it('parses a large change off the event loop, keeping the config in use until then; the last of two changes is the one applied; each config put in use is told', async () => {
    const THREAD = new URL('../../../dist/auth/auth-parse-thread.js', import.meta.url);
    const many = (prefix: string) => keys(...Array.from({ length: 600 }, (_, i) => `${prefix}${i}`));
    expect(many('b').length).toBeGreaterThan(PARSE_IN_PLACE_CHARS);
    const f = file(keys('a'));
    const logs: string[] = [];
    const applied: number[] = [];
    const s = new AuthSource(f, (m) => logs.push(m), { parseThread: THREAD, onApplied: (c) => applied.push(c.apiKeys.length) });
    s.start();
    try {
      writeFileSync(f, many('b'));
      let done = false;
      const reload = s.reload();
      void reload.finally(() => { done = true; });
      // Not swapped yet: the parse is in its thread, and the config in use stays.
      expect(names(s)).toContain('a');
      let turns = 0;
      const count = (): void => { if (!done) { turns++; setImmediate(count); } };
      setImmediate(count);
      writeFileSync(f, many('c')); // changed again while the first is parsed
      expect(s.reload()).toBe(reload);
      expect(await reload).toBe(true);
      expect(turns).toBeGreaterThan(0);
      expect(names(s)).toContain('c599');
      expect(names(s)).not.toContain('b0');
      expect(names(s)).not.toContain('a');
      expect(applied).toEqual([1, 600, 600]); // the first config, then each change put in use

      // A bad large change: refused, naming the field, the config in use kept.
      writeFileSync(f, `${many('d')}  - { name: broken }\n`);
      expect(await s.reload()).toBe(false);
      expect(s.rejected).toBe(1);
      expect(logs.at(-1)).toMatch(/^auth reload rejected, keeping the last good config: .*auth\.yaml: apiKeys\[600\]\.sha256/);
      expect(names(s)).toContain('c0');

      // Stopped while a parse is under way: it changes nothing when it ends.
      writeFileSync(f, many('e'));
      const late = s.reload();
      s.stop();
      expect(await late).toBe(false);
      expect(names(s)).toContain('c0');
      expect(names(s)).not.toContain('e0');
      expect(applied).toEqual([1, 600, 600]); // neither the refused change nor the one parsed after stop()
      expect(logs.filter((m) => m.startsWith('auth reloaded'))).toEqual([
        expect.stringMatching(/: 600 API keys, JWT off$/),
        expect.stringMatching(/: 600 API keys, JWT off$/),
      ]);
    } finally {
      s.stop();
    }
  });

  it('is off without ROUTER_AUTH_CONFIG', () => {
    expect(startAuthSource(null, () => {})).toBeNull();
    expect(startAuthSource('', () => {})).toBeNull();
    const s = startAuthSource(file(keys('a')), () => {});
    expect(s).toBeInstanceOf(AuthSource);
    s!.stop();
  });
});
