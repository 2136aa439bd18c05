/**
 * An inline key set whose keys cannot verify any token (a damaged coordinate, a curve that does
 * not fit the point, an RSA modulus under jose's 2048 bits, a key type no accepted algorithm uses)
 * is an invalid auth file (built router): it stops the router at start, naming the file and the
 * key, rather than a router that answers every token 401 "not accepted".
 */
import { spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI, resourcesFor, tempDir, writeFile } from '../helpers/processes.js';
import { serverPort } from '../helpers/ports.js';

const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' });
const smallRsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ format: 'jwk' });
const x25519 = generateKeyPairSync('x25519').publicKey.export({ format: 'jwk' });

describe('inline JWT keys are checked when the auth file loads (built router)', () => {
  it('a key that cannot verify tokens stops the router at start with exit 2, naming the file and the key', async () => {
    const dir = tempDir();
    const resources = join(dir, 'resources.yaml');
    writeFile(resources, resourcesFor([{ name: 'p', port: 1 }]));
    const port = String(await serverPort());
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ ...ec, x: `${ec.x!.slice(0, -4)}AAAA`, kid: 'k1' }, /jwt\.jwks\.keys\[1\]: not a usable public key/],
      [{ ...ec, crv: 'P-384', kid: 'k1' }, /jwt\.jwks\.keys\[1\]: not a usable public key/],
      [{ kty: 'EC', kid: 'k1' }, /jwt\.jwks\.keys\[1\]: not a usable public key/],
      [{ ...smallRsa, kid: 'k1' }, /jwt\.jwks\.keys\[1\]: an RSA key of 1024 bits; tokens are verified with RSA keys of 2048 bits or more/],
      [{ ...x25519, kid: 'k1' }, /jwt\.jwks\.keys\[1\]: an x25519 key, which verifies none of the accepted algorithms/],
    ];
    for (const [bad, message] of cases) {
      const auth = join(dir, 'auth.yaml');
      writeFile(auth, `jwt:\n  issuer: https://issuer.test\n  audiences: [inference-router]\n  jwks: ${JSON.stringify({ keys: [{ ...ec, kid: 'k0' }, bad] })}\n`);
      const r = spawnSync(process.execPath, [CLI, '--resources', resources, '--workers', '1', '--port', port], {
        encoding: 'utf8', env: { ...process.env, ROUTER_AUTH_CONFIG: auth }, timeout: 20_000,
      });
      expect(r.status, `${JSON.stringify(bad)}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toContain(auth);
      expect(r.stderr).toMatch(message);
    }
  });
});
