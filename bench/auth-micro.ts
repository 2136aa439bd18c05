/**
 * Micro benchmark of per-request authentication cost, measured in one run:
 *  - API key: sha256 of the presented key, Map lookup, timingSafeEqual, model glob check;
 *  - JWT ES256 and RS256 verified every time (jose jwtVerify with an inline key set, claims and
 *    models claim checked; tokenCacheSize 0), and the same tokens from the verified-token cache;
 *  - a rejected unknown API key (401 path, includes building the RouterError);
 *  - an expired JWT sent again (401: refused from memory after its first verification);
 *  - a JWT with a bad signature sent again (a key of its own under a published kid; 401: refused
 *    from memory while the key set it was checked against is the one in use).
 *
 * Run: npm run build && node dist/bench/auth-micro.js
 */
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { parseAuthConfig } from 'inference-router/auth/auth-config';
import { Authenticator } from 'inference-router/auth/authenticator';
import { takesNoArguments } from './cli-args.js';

takesNoArguments('Usage: node dist/bench/auth-micro.js   (no options)');

const KEY = 'sk-bench-0123456789abcdef0123456789';

async function token(alg: 'ES256' | 'RS256', kid: string): Promise<{ jwt: string; expired: string; forged: string; jwk: object }> {
  const { privateKey, publicKey } = await generateKeyPair(alg);
  const other = await generateKeyPair(alg);
  const jwk = { ...(await exportJWK(publicKey)), kid, alg };
  const signed = (expiresAt: string | number, key = privateKey): Promise<string> => new SignJWT({ models: ['sf-*', 'llama-*'] })
    .setProtectedHeader({ alg, kid })
    .setIssuer('https://issuer.bench').setAudience('inference-router').setSubject('bench')
    .setIssuedAt().setExpirationTime(expiresAt)
    .sign(key);
  return { jwt: await signed('1h'), expired: await signed(Math.floor(Date.now() / 1000) - 3600), forged: await signed('1h', other.privateKey), jwk };
}

async function measure(name: string, n: number, fn: () => unknown): Promise<void> {
  for (let i = 0; i < Math.min(n, 5000); i++) await fn(); // warm-up
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await fn();
  const us = ((performance.now() - t0) * 1000) / n;
  console.log(`${name.padEnd(48)} ${us.toFixed(2).padStart(8)} µs/request  (${n} requests)`);
}

async function main(): Promise<void> {
  const es = await token('ES256', 'es');
  const rs = await token('RS256', 'rs');
  const keys = Array.from({ length: 1000 }, (_, i) => `  - { name: k${i}, sha256: "${createHash('sha256').update(`other-${i}`).digest('hex')}" }`).join('\n');
  const config = parseAuthConfig(`
apiKeys:
  - { name: bench, sha256: "${createHash('sha256').update(KEY).digest('hex')}", models: ["sf-model", "llama-*"] }
${keys}
jwt:
  issuer: https://issuer.bench
  audiences: [inference-router]
  jwks: ${JSON.stringify({ keys: [es.jwk, rs.jwk] })}
  modelsClaim: models
`, 'bench.yaml');
  const auth = new Authenticator(config);
  const uncached = new Authenticator(config, { tokenCacheSize: 0 });
  console.log(`node ${process.version}; 1001 API keys configured`);
  await measure('API key (sync), allowed by glob', 500_000, () => auth.authorize(`Bearer ${KEY}`, 'llama-3'));
  await measure('API key unknown (401)', 200_000, () => {
    try { auth.authorize('Bearer sk-unknown-0000000000', 'm'); } catch { /* expected */ }
  });
  await measure('JWT ES256, verified every request', 20_000, () => uncached.authorize(`Bearer ${es.jwt}`, 'sf-model'));
  await measure('JWT RS256, verified every request', 20_000, () => uncached.authorize(`Bearer ${rs.jwt}`, 'sf-model'));
  await measure('JWT ES256, verified-token cache hit', 500_000, () => auth.authorize(`Bearer ${es.jwt}`, 'sf-model'));
  await measure('JWT RS256, verified-token cache hit', 500_000, () => auth.authorize(`Bearer ${rs.jwt}`, 'sf-model'));
  await measure('JWT ES256 expired (401), the same token again', 200_000, async () => {
    try { await auth.authorize(`Bearer ${es.expired}`, 'sf-model'); } catch { /* expected */ }
  });
  await measure('JWT ES256 bad signature (401), same token again', 20_000, async () => {
    try { await auth.authorize(`Bearer ${es.forged}`, 'sf-model'); } catch { /* expected */ }
  });
}

void main();
