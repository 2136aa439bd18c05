/**
 * The auth config as the primary sends it to its workers (auth/auth-config-wire.ts): through JSON,
 * as node:cluster's IPC carries it, it comes back equal to the parsed config, frozen, its globs and
 * tenant limits working.
 */
import { describe, expect, it } from 'vitest';
import { parseAuthConfig } from '../../../src/auth/auth-config.js';
import { authConfigFromWire, authConfigToWire } from '../../../src/auth/auth-config-wire.js';
import { globsAllow } from '../../../src/auth/model-globs.js';
import { sha256Hex } from './jwks-server.js';

const text = `apiKeys:
  - name: team-a
    sha256: "${sha256Hex('sk-a')}"
    models: ["sf-model", "llama-*", "m?"]
    rateLimit: { inputTokensPerUnit: 100, outputTokensPerUnit: 50, unit: minute, global: { redis: { address: "redis:6379" } }, mode: shadow }
  - name: everything
    sha256: "${sha256Hex('sk-all')}"
    models: ["**", "sf-model"]
  - name: ops
    sha256: "${sha256Hex('sk-ops')}"
jwt:
  issuer: https://issuer.test
  audiences: [inference-router, other]
  jwks: { keys: [{ kty: EC, crv: P-256, x: "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", y: "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0", kid: k1 }] }
  modelsClaim: models
  tenantClaim: org
  rateLimit: { inputTokensPerUnit: 20000, unit: minute }
  tenantLimits:
    - tenant: acme
      rateLimit: { inputTokensPerUnit: 10, unit: hour }
    - tenant: "42"
      rateLimit: { outputTokensPerUnit: 7, unit: day }
`;

describe('the auth config sent to the workers', () => {
  it('comes back through JSON equal to the parsed config, frozen', () => {
    const parsed = parseAuthConfig(text, 'auth.yaml');
    const back = authConfigFromWire(JSON.parse(JSON.stringify(authConfigToWire(parsed))));
    expect(back).toEqual(parsed);
    expect(Object.isFrozen(back)).toBe(true);
    expect(Object.isFrozen(back.apiKeys[0])).toBe(true);
    expect(Object.isFrozen(back.apiKeys[0].rateLimit)).toBe(true);
    expect(Object.isFrozen(back.jwt)).toBe(true);
    expect(back.jwt?.tenantLimits.get('acme')?.inputTokensPerUnit).toBe(10);
    expect(back.jwt?.tenantLimits.get('42')?.outputTokensPerUnit).toBe(7);
  });

  it('its model globs allow what the parsed ones allow', () => {
    const parsed = parseAuthConfig(text, 'auth.yaml');
    const back = authConfigFromWire(JSON.parse(JSON.stringify(authConfigToWire(parsed))));
    for (const model of ['sf-model', 'llama-3', 'llama', 'm1', 'm12', 'other', '']) {
      for (let i = 0; i < 2; i++) expect(globsAllow(back.apiKeys[i].models!, model), `${i} ${model}`).toBe(globsAllow(parsed.apiKeys[i].models!, model));
    }
    expect(back.apiKeys[1].models!.all).toBe(true);
    expect(back.apiKeys[2].models).toBeNull();
  });

  it('without a jwt section', () => {
    const parsed = parseAuthConfig(`apiKeys:\n  - { name: a, sha256: "${sha256Hex('k')}" }\n`, 'auth.yaml');
    expect(authConfigFromWire(JSON.parse(JSON.stringify(authConfigToWire(parsed))))).toEqual(parsed);
  });
});
