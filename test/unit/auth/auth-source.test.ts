import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AuthConfigError } from '../../../src/auth/auth-config.js';
import { AuthSource, loadAuthConfigFile, startAuthSource } from '../../../src/auth/auth-source.js';
import type { Exchange } from '../../../src/http/exchange.js';
import { RouterError } from '../../../src/errors.js';
import { JwksServer, makeKey, sha256Hex, signToken } from './jwks-server.js';

const dirs: string[] = [];
function file(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'ir-auth-'));
  dirs.push(dir);
  const f = join(dir, 'auth.yaml');
  writeFileSync(f, text);
  return f;
}
const keys = (...names: string[]) => `apiKeys:\n${names.map((n) => `  - { name: ${n}, sha256: "${sha256Hex(`key-${n}`)}" }`).join('\n')}\n`;
const exchange = (authorization: string) => ({ authorization }) as unknown as Exchange;

function status(fn: () => unknown): number {
  try {
    fn();
    return 200;
  } catch (err) {
    return (err as RouterError).status;
  }
}

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

  it('swaps in a valid change and keeps the last good config on a bad one', () => {
    const f = file(keys('a'));
    const logs: string[] = [];
    const levels: string[] = [];
    const s = new AuthSource(f, (m, level) => {
      logs.push(m);
      levels.push(level);
    });
    s.start();
    try {
      expect(status(() => s.authorize(exchange('Bearer key-a'), 'm'))).toBe(200);
      expect(status(() => s.authorize(exchange('Bearer key-b'), 'm'))).toBe(401);

      writeFileSync(f, keys('b'));
      expect(s.reload()).toBe(true);
      expect(status(() => s.authorize(exchange('Bearer key-a'), 'm'))).toBe(401);
      expect(status(() => s.authorize(exchange('Bearer key-b'), 'm'))).toBe(200);

      writeFileSync(f, 'apiKeys: [{ name: c, sha256: nope }]');
      expect(s.reload()).toBe(false);
      expect(s.rejected).toBe(1);
      expect(logs.at(-1)).toMatch(/auth reload rejected, keeping the last good config: .*auth\.yaml: apiKeys\[0\]\.sha256/);
      // A reload applied is information; one refused is a warning (a broken file in production).
      expect(levels.slice(-2)).toEqual(['info', 'warn']);
      expect(status(() => s.authorize(exchange('Bearer key-b'), 'm'))).toBe(200);

      rmSync(f);
      expect(s.reload()).toBe(false);
      expect(s.rejected).toBe(2);
      expect(status(() => s.authorize(exchange('Bearer key-b'), 'm'))).toBe(200);
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
      for (let i = 0; i < 400 && status(() => s.authorize(exchange('Bearer key-b'), 'm')) !== 200; i++) {
        await new Promise((r) => setTimeout(r, 10));
      }
      expect(status(() => s.authorize(exchange('Bearer key-b'), 'm'))).toBe(200);
    } finally {
      s.stop();
    }
  });

  it('a reload naming the same remote key set keeps its keys: tokens still verify while the issuer is down', async () => {
    const jwks = await new JwksServer().start();
    const key = await makeKey('k1');
    jwks.keys = [key.jwk];
    const jwt = `jwt:\n  issuer: https://issuer.test\n  audiences: [inference-router]\n  jwksUri: ${jwks.url}\n`;
    const f = file(keys('a') + jwt);
    const logs: string[] = [];
    const s = new AuthSource(f, (m) => logs.push(m));
    s.start();
    try {
      const before = await s.authorize(exchange(`Bearer ${await signToken(key, { subject: 'before' })}`), 'm');
      expect(before.subject).toBe('before');
      expect(jwks.fetches).toBe(1);
      jwks.status = 500; // the issuer goes down
      writeFileSync(f, keys('a', 'b') + jwt);
      expect(s.reload()).toBe(true);
      // A token never seen before (not in the verified-token cache) is checked with the kept keys.
      const after = await s.authorize(exchange(`Bearer ${await signToken(key, { subject: 'after' })}`), 'm');
      expect(after.subject).toBe('after');
      expect(jwks.fetches).toBe(1);
      expect(logs.filter((l) => l.includes('fetching the key set'))).toEqual([]);
    } finally {
      s.stop();
      await jwks.stop();
    }
  });

  it('a reload while the first fetch of the same key set is under way: tokens on the new config wait for that fetch, no 503', async () => {
    const jwks = await new JwksServer().start();
    const key = await makeKey('k1');
    jwks.keys = [key.jwk];
    jwks.delayMs = 200; // a slow issuer: the reload lands while its answer is on the way
    const jwt = `jwt:\n  issuer: https://issuer.test\n  audiences: [inference-router]\n  jwksUri: ${jwks.url}\n`;
    const f = file(keys('a') + jwt);
    const s = new AuthSource(f, () => undefined);
    s.start();
    try {
      const first = s.authorize(exchange(`Bearer ${await signToken(key, { subject: 'first' })}`), 'm');
      writeFileSync(f, keys('a', 'b') + jwt);
      expect(s.reload()).toBe(true);
      const second = s.authorize(exchange(`Bearer ${await signToken(key, { subject: 'second' })}`), 'm');
      expect((await first).subject).toBe('first');
      expect((await second).subject).toBe('second');
      expect(jwks.fetches).toBe(1);
      // And later tokens on the new config use the keys that fetch brought.
      expect((await s.authorize(exchange(`Bearer ${await signToken(key, { subject: 'third' })}`), 'm')).subject).toBe('third');
      expect(jwks.fetches).toBe(1);
    } finally {
      s.stop();
      await jwks.stop();
    }
  });

  it('starts from the last good text given when the file is invalid or unreadable now, then follows the file', () => {
    const good = keys('a');
    const f = file('apiKeys: [{ name: broken }]');
    const logs: string[] = [];
    const s = new AuthSource(f, (m) => logs.push(m));
    expect(() => s.start()).toThrow(AuthConfigError);
    s.start(250, good);
    try {
      expect(status(() => s.authorize(exchange('Bearer key-a'), 'm'))).toBe(200);
      expect(s.lastGoodText).toBe(good);
      expect(s.rejected).toBe(1);
      expect(logs).toEqual([expect.stringMatching(/^auth file not usable, starting with the last good config: .*auth\.yaml: apiKeys\[0\]\.sha256/)]);
      expect(s.reload()).toBe(false); // the same invalid text: not logged again
      expect(logs.length).toBe(1);
      writeFileSync(f, keys('b'));
      expect(s.reload()).toBe(true);
      expect(s.lastGoodText).toBe(keys('b'));
      expect(status(() => s.authorize(exchange('Bearer key-b'), 'm'))).toBe(200);
    } finally {
      s.stop();
    }
    const gone = new AuthSource(join(tmpdir(), 'no-such-auth.yaml'), () => {});
    gone.start(250, good);
    expect(status(() => gone.authorize(exchange('Bearer key-a'), 'm'))).toBe(200);
    gone.stop();
  });

  it('is off without ROUTER_AUTH_CONFIG', () => {
    expect(startAuthSource(null, () => {})).toBeNull();
    expect(startAuthSource('', () => {})).toBeNull();
    const s = startAuthSource(file(keys('a')), () => {});
    expect(s).toBeInstanceOf(AuthSource);
    s!.stop();
  });
});
