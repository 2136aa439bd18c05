/**
 * The router's own HTTPS listener (ROUTER_TLS_CERT_FILE, ROUTER_TLS_KEY_FILE) over the built router
 * with 2 workers and a mock pod: a client that trusts the CA gets its completion, /readyz and
 * /metrics over HTTPS; a plain-HTTP request to that port gets no answer; the image's health check
 * reads the router's TLS settings and asks over HTTPS. Settings that cannot work stop the router at
 * start (exit 2) naming the variable and the file. A throwaway CA made with openssl.
 */
import { execFileSync } from 'node:child_process';
import { request } from 'node:https';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, ROOT, resourcesFor, startMock, startProcess, tempDir, waitFor, writeFile, type MockBackend, type Proc } from '../helpers/processes.js';
import { createTestCa, type TestCa } from '../helpers/test-ca.js';
import { serverPort, unusedPort } from '../helpers/ports.js';

/** A request over HTTPS trusting only `ca`: status and body. */
function httpsCall(port: number, path: string, ca: string, body: unknown = null): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const payload = body === null ? null : JSON.stringify(body);
    const req = request({ host: '127.0.0.1', port, path, method: payload === null ? 'GET' : 'POST', ca, servername: 'localhost', headers: payload === null ? {} : { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d: string) => { text += d; }).on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.end(payload ?? undefined);
  });
}

describe('the HTTPS listener', () => {
  let ca: TestCa;
  let mock: MockBackend;
  let router: Proc;
  let port: number;
  let caPem: string;
  let resourcesFile: string;

  beforeAll(async () => {
    ca = await createTestCa();
    caPem = readFileSync(ca.caFile, 'utf8');
    mock = await startMock('pod-a');
    port = await serverPort();
    resourcesFile = join(tempDir(), 'resources.yaml');
    writeFile(resourcesFile, resourcesFor([{ name: 'pod-a', port: mock.port }]));
    router = startProcess([CLI, '--resources', resourcesFile, '--port', String(port), '--host', '127.0.0.1', '--workers', '2'],
      { ACCESS_LOG_ENABLED: 'false', ROUTER_DRAIN_DELAY: '0', ROUTER_TLS_CERT_FILE: ca.certFile, ROUTER_TLS_KEY_FILE: ca.keyFile }, { name: 'router' });
    await waitFor('the router ready over HTTPS', async () => {
      if (router.child.exitCode !== null) throw new Error(`router exited ${router.child.exitCode}: ${router.stderr()}`);
      return (await httpsCall(port, '/readyz', caPem).catch(() => ({ status: 0 }))).status === 200;
    }, 30_000);
  });
  afterAll(async () => {
    await Promise.all([router?.kill(), mock?.kill()]);
    ca?.remove();
  });

  it('answers a completion, /readyz and /metrics over HTTPS, and says so when ready', async () => {
    const r = await httpsCall(port, '/v1/completions', caPem, { model: 'sf-model', prompt: 'San Francisco is a', max_tokens: 5 });
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body).choices).toHaveLength(1);
    expect((await httpsCall(port, '/metrics', caPem)).body).toContain('inference_router_requests_total');
    expect(router.stderr()).toMatch(/2 workers listening on 127\.0\.0\.1:\d+ \(HTTPS\)/);
  });

  it('says at start that the served certificate expires within 7 days (the test CA\'s is valid 2)', () => {
    const line = router.stderr().split('\n').find((l) => l.includes('expires at'));
    expect(line).toMatch(/ warn \[primary \d+\] tls: the certificate served over HTTPS \(CN=127\.0\.0\.1\) expires at \S+Z, in 1 day 23 h; renew ROUTER_TLS_CERT_FILE and ROUTER_TLS_KEY_FILE: the router serves a new pair without a restart$/);
  });

  it('gives a plain-HTTP request to that port no answer', async () => {
    const outcome = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(5_000) }).then((res) => `status ${res.status}`, () => 'failed');
    expect(outcome).toBe('failed');
  });

  it('TLS 1.2 with forward secrecy and AEAD only (Mozilla intermediate): a client offering AES128-SHA alone is refused, ECDHE with GCM is served; TLS 1.3 is served', async () => {
    const handshake = (options: ConnectionOptions): Promise<string> => new Promise((resolve) => {
      const s = tlsConnect({ host: '127.0.0.1', port, ca: caPem, servername: 'localhost', ...options }, () => {
        resolve(`${s.getProtocol()} ${s.getCipher().name}`);
        s.end();
      });
      s.on('error', (err) => resolve(`refused: ${(err as NodeJS.ErrnoException).code ?? err.message}`));
    });
    expect(await handshake({ maxVersion: 'TLSv1.2', ciphers: 'AES128-SHA' })).toMatch(/^refused: /);
    expect(await handshake({ maxVersion: 'TLSv1.2', ciphers: 'AES256-GCM-SHA384' })).toMatch(/^refused: /);
    expect(await handshake({ maxVersion: 'TLSv1.2', ciphers: 'ECDHE-RSA-AES128-GCM-SHA256' })).toBe('TLSv1.2 ECDHE-RSA-AES128-GCM-SHA256');
    expect(await handshake({ minVersion: 'TLSv1.3' })).toMatch(/^TLSv1\.3 TLS_/);
  });

  it('the image health check asks over HTTPS and finds the router healthy', async () => {
    const p = startProcess([join(ROOT, 'dist/healthcheck.js'), String(router.pid)], {}, { name: 'healthcheck' });
    expect(await p.exited).toBe(0);
    expect(p.stderr()).toBe('');
  });
});

describe('TLS settings that cannot work stop the router at start', () => {
  let ca: TestCa;
  let other: TestCa;
  beforeAll(async () => {
    [ca, other] = await Promise.all([createTestCa(), createTestCa()]);
  });
  afterAll(() => {
    ca?.remove();
    other?.remove();
  });

  async function start(env: NodeJS.ProcessEnv): Promise<{ code: number | null; stderr: string }> {
    const dir = tempDir();
    writeFile(join(dir, 'r.yaml'), resourcesFor([{ name: 'pod-a', port: await unusedPort() }]));
    const p = startProcess([CLI, '--resources', join(dir, 'r.yaml'), '--port', String(await serverPort()), '--workers', '1'], env, { name: 'router' });
    const code = await p.exited;
    return { code, stderr: p.stderr() };
  }

  it('one file of the two: names the one missing', async () => {
    const r = await start({ ROUTER_TLS_CERT_FILE: ca.certFile });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('ROUTER_TLS_CERT_FILE is set but ROUTER_TLS_KEY_FILE is not: HTTPS needs both the certificate and its key (neither: plain HTTP)');
  });

  it('a file that cannot be read, or holds no certificate', async () => {
    const missing = await start({ ROUTER_TLS_CERT_FILE: join(ca.dir, 'nope.crt'), ROUTER_TLS_KEY_FILE: ca.keyFile });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(`ROUTER_TLS_CERT_FILE: expected a readable PEM file of the server certificate; got "${join(ca.dir, 'nope.crt')}" (cannot read it: ENOENT`);
    const swapped = await start({ ROUTER_TLS_CERT_FILE: ca.keyFile, ROUTER_TLS_KEY_FILE: ca.keyFile });
    expect(swapped.code).toBe(2);
    expect(swapped.stderr).toContain(`ROUTER_TLS_CERT_FILE: expected a PEM file of the server certificate; got "${ca.keyFile}"`);
  });

  it('a chain whose second certificate is damaged: named with its place in the file (the HTTPS server would refuse the file)', async () => {
    const dir = tempDir();
    const chain = join(dir, 'chain.crt');
    writeFile(chain, `${readFileSync(ca.certFile, 'utf8')}-----BEGIN CERTIFICATE-----\nAAAAgarbage\n-----END CERTIFICATE-----\n`);
    const r = await start({ ROUTER_TLS_CERT_FILE: chain, ROUTER_TLS_KEY_FILE: ca.keyFile });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`ROUTER_TLS_CERT_FILE: expected a PEM file of the server certificate; got "${chain}" (certificate 2 of 2:`);
    expect(r.stderr).not.toContain('App construction failed');
  });

  it('an RSA-PSS pair, which Node reads but the HTTPS server cannot load: exit 2 naming both files, before any worker fails on it', async () => {
    const dir = tempDir();
    const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
    openssl('genpkey', '-algorithm', 'RSA-PSS', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', 'pss.key');
    openssl('req', '-x509', '-key', 'pss.key', '-subj', '/CN=127.0.0.1', '-days', '2', '-out', 'pss.crt');
    const r = await start({ ROUTER_TLS_CERT_FILE: join(dir, 'pss.crt'), ROUTER_TLS_KEY_FILE: join(dir, 'pss.key') });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`the HTTPS server (uWebSockets.js) cannot load the pair in "${join(dir, 'pss.crt')}" and "${join(dir, 'pss.key')}"`);
    expect(r.stderr).not.toMatch(/worker \d+ (exited|failed)/);
  });

  it('a key that is not the certificate\'s', async () => {
    const r = await start({ ROUTER_TLS_CERT_FILE: ca.certFile, ROUTER_TLS_KEY_FILE: other.keyFile });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`ROUTER_TLS_KEY_FILE: the key in "${other.keyFile}" is not the key of the certificate in "${ca.certFile}" (ROUTER_TLS_CERT_FILE, CN=127.0.0.1)`);
  });
});
