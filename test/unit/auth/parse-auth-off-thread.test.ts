/**
 * The auth file parsed in a thread of its own (auth/parse-auth-off-thread.ts, the built parser
 * module in dist/): the same config as parsing it in the process, frozen, the same errors, and a
 * parser that cannot be loaded said at once rather than waited for; waited for at start, or not
 * (a reload), where a thread that ends without an outcome or gives none in time is an error too.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { AuthConfigError, parseAuthConfig } from '../../../src/auth/auth-config.js';
import { parseAuthConfigInThread, parseAuthConfigOffThread } from '../../../src/auth/parse-auth-off-thread.js';
import { sha256Hex } from './jwks-server.js';

const THREAD = new URL('../../../dist/auth/auth-parse-thread.js', import.meta.url);

const text = `apiKeys:
  - name: team-a
    sha256: "${sha256Hex('sk-a')}"
    models: ["sf-model", "llama-*"]
    rateLimit: { inputTokensPerUnit: 100, outputTokensPerUnit: 50, unit: minute }
  - name: ops
    sha256: "${sha256Hex('sk-ops')}"
jwt:
  issuer: https://issuer.test
  audiences: [inference-router]
  jwksUri: https://issuer.test/jwks
  tenantClaim: org
  tenantLimits:
    - tenant: acme
      rateLimit: { inputTokensPerUnit: 10, unit: hour }
`;

describe('parseAuthConfigOffThread', () => {
  it('gives the config parsing in the process gives, frozen', () => {
    const off = parseAuthConfigOffThread(text, 'auth.yaml', false, THREAD);
    expect(off).toEqual(parseAuthConfig(text, 'auth.yaml'));
    expect(Object.isFrozen(off)).toBe(true);
    expect(Object.isFrozen(off.apiKeys[0])).toBe(true);
    expect(off.apiKeys[0].models?.exact.has('sf-model')).toBe(true);
    expect(off.jwt?.tenantLimits.get('acme')?.inputTokensPerUnit).toBe(10);
  });

  it('throws the AuthConfigError parsing in the process throws', () => {
    const bad = text.replace('name: ops', 'name: ""');
    let inProcess: unknown = null;
    try { parseAuthConfig(bad, 'auth.yaml'); } catch (err) { inProcess = err; }
    expect(inProcess).toBeInstanceOf(AuthConfigError);
    expect(() => parseAuthConfigOffThread(bad, 'auth.yaml', false, THREAD)).toThrow(new AuthConfigError('auth.yaml', (inProcess as AuthConfigError).path, (inProcess as AuthConfigError).problem));
    try { parseAuthConfigOffThread(bad, 'auth.yaml', false, THREAD); } catch (err) { expect(err).toBeInstanceOf(AuthConfigError); }
  });

  it('a parser module that cannot be loaded: an error naming the file, at once', () => {
    expect(() => parseAuthConfigOffThread(text, 'auth.yaml', false, new URL('file:///nonexistent/auth-parse-thread.js')))
      .toThrow(/^auth\.yaml: cannot load the auth file parser: /);
  });
});

describe('parseAuthConfigInThread (a reload: not waited for)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ir-auth-thread-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  /** A parser module of its own: `body` is runAuthParse's. */
  const parser = (name: string, body: string): URL => {
    const f = join(dir, `${name}.mjs`);
    writeFileSync(f, `export function runAuthParse(job) { ${body} }\n`);
    return pathToFileURL(f);
  };

  it('resolves with the config parsing in the process gives, frozen, while the event loop turns', async () => {
    let turns = 0;
    let done = false;
    const p = parseAuthConfigInThread(text, 'auth.yaml', false, THREAD).finally(() => { done = true; });
    const count = (): void => { if (!done) { turns++; setImmediate(count); } };
    setImmediate(count);
    const config = await p;
    expect(config).toEqual(parseAuthConfig(text, 'auth.yaml'));
    expect(Object.isFrozen(config.apiKeys[0])).toBe(true);
    expect(turns).toBeGreaterThan(0);
  });

  it('rejects with the AuthConfigError parsing in the process throws', async () => {
    const bad = text.replace('name: ops', 'name: ""');
    const err = await parseAuthConfigInThread(bad, 'auth.yaml', false, THREAD).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AuthConfigError);
    expect((err as AuthConfigError).path).toBe('apiKeys[1].name');
  });

  it('a parser that cannot be loaded, that ends without an outcome (with what ended it), or gives none in time: an error naming the file', async () => {
    await expect(parseAuthConfigInThread(text, 'auth.yaml', false, new URL('file:///nonexistent/auth-parse-thread.js')))
      .rejects.toThrow(/^auth\.yaml: cannot load the auth file parser: /);
    await expect(parseAuthConfigInThread(text, 'auth.yaml', false, parser('exits', 'process.exit(3);')))
      .rejects.toThrow("auth.yaml: the auth file's parser thread ended (code 3) without a result");
    await expect(parseAuthConfigInThread(text, 'auth.yaml', false, parser('throws', "setImmediate(() => { throw new Error('the parser broke'); });")))
      .rejects.toThrow("auth.yaml: the auth file's parser thread ended (code 1) without a result: the parser broke");
    await expect(parseAuthConfigInThread(text, 'auth.yaml', false, parser('hangs', 'setInterval(() => {}, 1000);'), 300))
      .rejects.toThrow("auth.yaml: the auth file's parser thread gave no result within 0.3 s");
  });

  it('an outcome posted just before the thread ends is taken, not lost to the end', async () => {
    const posts = parser('posts-and-exits', "job.port.postMessage({ ok: false, file: 'auth.yaml', path: 'apiKeys', problem: 'said then gone' }); process.exit(0);");
    await expect(parseAuthConfigInThread(text, 'auth.yaml', false, posts)).rejects.toThrow(new AuthConfigError('auth.yaml', 'apiKeys', 'said then gone'));
  });
});
