import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';

/** A key pair the tests sign with; `jwk` is the public half as published. */
export interface TestKey {
  kid: string;
  privateKey: CryptoKey;
  jwk: JWK;
}

export async function makeKey(kid: string, alg: 'ES256' | 'RS256' = 'ES256'): Promise<TestKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' };
  return { kid, privateKey, jwk };
}

export interface TokenOptions {
  issuer?: string;
  audience?: string | string[];
  subject?: string;
  /** Seconds from now (negative = in the past); null: no `exp` claim at all. */
  expiresIn?: number | null;
  notBefore?: number;
  claims?: Record<string, unknown>;
  alg?: string;
}

export async function signToken(key: TestKey, o: TokenOptions = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const jwt = new SignJWT({ ...(o.claims ?? {}) })
    .setProtectedHeader({ alg: o.alg ?? (key.jwk.alg as string), kid: key.kid })
    .setIssuer(o.issuer ?? 'https://issuer.test')
    .setAudience(o.audience ?? 'inference-router')
    .setSubject(o.subject ?? 'alice')
    .setIssuedAt(now - 10);
  if (o.expiresIn !== null) jwt.setExpirationTime(now + (o.expiresIn ?? 300));
  if (o.notBefore !== undefined) jwt.setNotBefore(now + o.notBefore);
  return jwt.sign(key.privateKey);
}

/** A real HTTP JWKS endpoint whose key set the test changes; counts fetches. */
export class JwksServer {
  keys: JWK[] = [];
  fetches = 0;
  status = 200;
  /** How long each answer waits, ms (a slow issuer). */
  delayMs = 0;
  private server: Server | null = null;
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      if (req.url !== '/jwks.json') {
        res.writeHead(404).end();
        return;
      }
      this.fetches++;
      if (this.status !== 200) {
        res.writeHead(this.status).end('down');
        return;
      }
      const body = JSON.stringify({ keys: this.keys });
      if (this.delayMs > 0) setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(body), this.delayMs);
      else res.writeHead(200, { 'content-type': 'application/json' }).end(body);
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    const port = (this.server.address() as { port: number }).port;
    this.url = `http://127.0.0.1:${port}/jwks.json`;
    return this;
  }

  async stop(): Promise<void> {
    if (this.server === null) return;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server!.close(() => resolve()));
  }
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
