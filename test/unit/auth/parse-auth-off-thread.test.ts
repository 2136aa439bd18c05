/**
 * The auth file parsed in a thread of its own (auth/parse-auth-off-thread.ts, the built parser
 * module in dist/): the same config as parsing it in the process, frozen, the same errors, and a
 * parser that cannot be loaded said at once rather than waited for.
 */
import { describe, expect, it } from 'vitest';
import { AuthConfigError, parseAuthConfig } from '../../../src/auth/auth-config.js';
import { parseAuthConfigOffThread } from '../../../src/auth/parse-auth-off-thread.js';
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
