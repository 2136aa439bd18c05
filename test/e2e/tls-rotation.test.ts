/**
 * Certificate rotation without a restart, over the built router with 2 workers serving HTTPS and a
 * mock pod. The files are laid out as a mounted Kubernetes Secret is (tls.crt and tls.key are
 * symlinks through `..data` to a directory of the pair). Throughout, two clients send requests:
 * one on a kept-alive connection, one on a new connection each time (noting the certificate it
 * got). The pair is replaced twice: once by swapping `..data` atomically, once by writing the
 * certificate then, after the router said the intermediate pair is invalid, the key, in place.
 * Each time new connections get the new certificate, the expiry metric follows, and no request fails
 * (but for a new connection the kernel resets as it had queued it for a listener closing: see below).
 * A worker restarted after a crash while the files hold half a pair serves the pair last checked.
 *
 * Then, over a second router: a rotation whose new workers cannot start (their access-log file's
 * path has become a directory, which a worker that is running, holding the file open, does not
 * notice) keeps the two workers it had, no more, is tried again on its own (5 s, then 10 s later)
 * and, once new workers can start, is done.
 *
 * The two routers run side by side (most of each part is waiting: for the retries, the workers'
 * replacement); each one's tests run in order.
 */
import { request, Agent } from 'node:https';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, childPids, resourcesFor, startMock, startProcess, tempDir, waitWhileRunning, writeFile, type MockBackend, type Proc } from '../helpers/processes.js';
import { createTestCa, type TestCa } from '../helpers/test-ca.js';
import { sample } from '../helpers/metrics-text.js';
import { serverPort } from '../helpers/ports.js';

const execFileP = promisify(execFile);

interface Pair { cert: string; key: string; fingerprint: string; notAfter: number }

/** A new server certificate and key signed by the test CA, valid `days` days. */
async function issue(ca: TestCa, name: string, days: number): Promise<Pair> {
  const f = (n: string): string => join(ca.dir, `${name}.${n}`);
  const openssl = (...args: string[]): Promise<unknown> => execFileP('openssl', args, { cwd: ca.dir });
  await openssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=127.0.0.1/O=${name}`, '-keyout', f('key'), '-out', f('csr'));
  await openssl('x509', '-req', '-in', f('csr'), '-CA', ca.caFile, '-CAkey', join(ca.dir, 'ca.key'), '-CAcreateserial',
    '-days', String(days), '-extfile', join(ca.dir, 'server.ext'), '-out', f('crt'));
  const cert = readFileSync(f('crt'), 'utf8');
  const x = new X509Certificate(cert);
  return { cert, key: readFileSync(f('key'), 'utf8'), fingerprint: x.fingerprint256, notAfter: Math.floor(new Date(x.validTo).getTime() / 1000) };
}

/** Whether this network namespace hands connections queued for a closing listener to another (Linux 5.14+). */
function tcpMigrateReq(): boolean {
  try {
    return readFileSync('/proc/sys/net/ipv4/tcp_migrate_req', 'utf8').trim() === '1';
  } catch {
    return false;
  }
}

/**
 * `handshake`: whether the request's connection finished a TLS handshake of its own (false for a
 * kept-alive connection reused); `reused`: whether the request went on a kept-alive connection.
 */
/** A router of `workers` serving HTTPS with the pair in `certFile` and `keyFile` (no access log), in front of a new mock pod; once ready. */
async function httpsRouter(certFile: string, keyFile: string, caPem: string, workers: number): Promise<{ router: Proc; mock: MockBackend; port: number }> {
  const mock = await startMock('pod-a');
  const port = await serverPort();
  const resourcesFile = join(tempDir(), 'resources.yaml');
  writeFile(resourcesFile, resourcesFor([{ name: 'pod-a', port: mock.port }]));
  const router = startProcess([CLI, '--resources', resourcesFile, '--port', String(port), '--host', '127.0.0.1', '--workers', String(workers)],
    { ACCESS_LOG_ENABLED: 'false', ROUTER_DRAIN_DELAY: '0', ROUTER_TLS_CERT_FILE: certFile, ROUTER_TLS_KEY_FILE: keyFile }, { name: 'router' });
  await waitWhileRunning('the router ready over HTTPS', router, async () => (await call(port, caPem, false, '/readyz')).ok, 30_000);
  return { router, mock, port };
}

interface Outcome { ok: boolean; status: number; fingerprint: string | null; error?: string; handshake?: boolean; reused?: boolean }

/** One HTTPS request trusting `ca`; `agent`: a kept-alive one, or false for a new connection. */
function call(port: number, ca: string, agent: Agent | false, path: string, body: unknown = null): Promise<Outcome> {
  return new Promise((resolve) => {
    const payload = body === null ? null : JSON.stringify(body);
    const req = request({ host: '127.0.0.1', port, path, method: payload === null ? 'GET' : 'POST', ca, servername: 'localhost', agent,
      headers: payload === null ? {} : { 'content-type': 'application/json' } }, (res) => {
      const fingerprint = (res.socket as TLSSocket).getPeerCertificate?.().fingerprint256 ?? null;
      res.resume().on('end', () => resolve({ ok: res.statusCode === 200, status: res.statusCode ?? 0, fingerprint }));
      res.on('error', (err) => resolve({ ok: false, status: 0, fingerprint, error: err.message }));
    });
    let handshake = false;
    // Only a new connection handshakes: a listener on a kept-alive one would never fire, and pile up.
    req.on('socket', (socket) => {
      if (!req.reusedSocket) socket.once('secureConnect', () => { handshake = true; });
    });
    req.on('error', (err) => resolve({ ok: false, status: 0, fingerprint: null, error: err.message, handshake, reused: req.reusedSocket }));
    req.end(payload ?? undefined);
  });
}

describe('certificate rotation', { concurrent: true }, () => {
  let ca: TestCa;
  let mock: MockBackend;
  let router: Proc;
  let port: number;
  let caPem: string;
  let secret: string;
  let first: Pair;
  let second: Pair;
  let third: Pair;

  /** Writes the pair as a new `..data` target and swaps the symlink, as the kubelet updates a mounted Secret. */
  const swapData = (pair: Pair, version: string): void => {
    mkdirSync(join(secret, version));
    writeFileSync(join(secret, version, 'tls.crt'), pair.cert);
    writeFileSync(join(secret, version, 'tls.key'), pair.key);
    symlinkSync(version, join(secret, '..data_tmp'));
    renameSync(join(secret, '..data_tmp'), join(secret, '..data'));
  };

  beforeAll(async () => {
    ca = await createTestCa();
    caPem = readFileSync(ca.caFile, 'utf8');
    [first, second, third] = [await issue(ca, 'first', 2), await issue(ca, 'second', 30), await issue(ca, 'third', 60)];
    secret = tempDir('ir-test-secret-');
    swapData(first, '..v1');
    symlinkSync('..data/tls.crt', join(secret, 'tls.crt'));
    symlinkSync('..data/tls.key', join(secret, 'tls.key'));
    ({ router, mock, port } = await httpsRouter(join(secret, 'tls.crt'), join(secret, 'tls.key'), caPem, 2));
  }, 60_000);
  afterAll(async () => {
    await Promise.all([router?.kill(), mock?.kill()]);
    ca?.remove();
  });

  const metricsText = (): Promise<string> => new Promise<string>((resolve, reject) => {
    request({ host: '127.0.0.1', port, path: '/metrics', ca: caPem, servername: 'localhost', agent: false }, (res) => {
      let t = '';
      res.setEncoding('utf8').on('data', (d: string) => { t += d; }).on('end', () => resolve(t));
    }).on('error', reject).end();
  });
  const expiry = async (): Promise<number | undefined> => sample(await metricsText(), 'inference_router_tls_certificate_expiry_seconds');
  /** Fingerprints of `n` new connections' certificates, once the requests succeeded. */
  const freshFingerprints = async (n: number): Promise<string[]> => {
    const out: string[] = [];
    for (let i = 0; i < n; i++) {
      const r = await call(port, caPem, false, '/v1/models');
      expect(r.ok).toBe(true);
      out.push(r.fingerprint ?? '');
    }
    return [...new Set(out)];
  };
  const count = (re: RegExp): number => router.stderr().split('\n').filter((l) => re.test(l)).length;

  it.sequential('serves a renewed pair on new connections, warns about a half-written one, and fails no request meanwhile', async () => {
    expect(await freshFingerprints(6)).toEqual([first.fingerprint]);
    expect(await expiry()).toBe(first.notAfter);

    // Clients throughout: one kept-alive connection (completions), one new connection per request.
    // The kept-alive client meets no reset: it opens a new connection after an answer that closed
    // its last one, which a retired worker sends only once its listener is closed (worker.ts).
    let running = true;
    const failures: Outcome[] = [];
    /** New connections reset before their TLS handshake: queued by the kernel for a listener as it closed (see below). */
    const queuedResets: Outcome[] = [];
    const seen = { keepAlive: 0, fresh: 0 };
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const keepAlive = (async () => {
      while (running) {
        const r = await call(port, caPem, agent, '/v1/completions', { model: 'sf-model', prompt: 'San Francisco is a', max_tokens: 3 });
        seen.keepAlive++;
        if (!r.ok) failures.push({ ...r, error: `kept-alive: ${r.error ?? ''}` });
      }
    })();
    const fresh = (async () => {
      for (let i = 0; running; i++) {
        const r = await call(port, caPem, false, i % 2 === 0 ? '/readyz' : '/v1/models');
        seen.fresh++;
        if (!r.ok && r.handshake === false && /ECONNRESET/.test(r.error ?? '')) queuedResets.push(r);
        else if (!r.ok) failures.push({ ...r, error: `new connection: ${r.error ?? ''}` });
      }
    })();

    try {
      // 1. The Secret's `..data` swapped to a directory of the new pair (the old one removed).
      swapData(second, '..v2');
      rmSync(join(secret, '..v1'), { recursive: true });
      await waitWhileRunning('the first rotation done', router, () => count(/certificate rotation done/) === 1, 60_000);
      expect(await freshFingerprints(6)).toEqual([second.fingerprint]);
      expect(await expiry()).toBe(second.notAfter);
      const afterFirst = { ...seen };

      // 2. Written in place, in two steps: the certificate (the key no longer matches it), then the key.
      writeFileSync(join(secret, '..v2', 'tls.crt'), third.cert);
      await waitWhileRunning('the warning about the intermediate pair', router, () => count(/certificate not rotated/) === 1, 30_000);
      expect(router.stderr()).toMatch(/certificate not rotated: ROUTER_TLS_KEY_FILE: the key in ".*tls\.key" is not the key of the certificate in ".*tls\.crt"/);
      expect(await freshFingerprints(4)).toEqual([second.fingerprint]);
      expect(await expiry()).toBe(second.notAfter);
      writeFileSync(join(secret, '..v2', 'tls.key'), third.key);
      await waitWhileRunning('the second rotation done', router, () => count(/certificate rotation done/) === 2, 60_000);
      expect(await freshFingerprints(6)).toEqual([third.fingerprint]);
      expect(await expiry()).toBe(third.notAfter);
      // Both clients kept going through each rotation.
      expect(afterFirst.keepAlive).toBeGreaterThan(5);
      expect(afterFirst.fresh).toBeGreaterThan(5);
      expect(seen.keepAlive).toBeGreaterThan(afterFirst.keepAlive + 5);
      expect(seen.fresh).toBeGreaterThan(afterFirst.fresh + 5);
    } finally {
      running = false;
      await Promise.all([keepAlive, fresh]);
      agent.destroy();
    }
    expect(failures).toEqual([]);
    // Every completion is counted: the retired workers handed the primary what they counted since
    // the last scrape before they exited.
    const completions = (await metricsText()).split('\n').filter((l) => l.startsWith('inference_router_requests_total{model="sf-model"') && l.includes('status="200"'));
    expect(completions.reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0)).toBe(seen.keepAlive);
    // Without net.ipv4.tcp_migrate_req the kernel resets a connection it had queued for a listener
    // in the instant that listener closes (deploy.md): at most one per worker replaced (2 rotations
    // of 2 workers), none with the sysctl on.
    expect(queuedResets.length).toBeLessThanOrEqual(tcpMigrateReq() ? 0 : 4);
    expect(count(/certificate rotation: replacing the workers/)).toBe(2);
    expect(count(/certificate not rotated/)).toBe(1);
    // The retired workers exited as drained, none was restarted as after a crash.
    expect(router.stderr()).not.toMatch(/exited \(|worker restarted/);
    expect(router.child.exitCode).toBe(null);
    // Readiness never went off meanwhile.
    expect(count(/\/readyz answers 200/)).toBe(1);
  }, 180_000);

  it.sequential('a worker restarted after a crash while the files hold half a pair serves the pair checked last', async () => {
    const fourth = await issue(ca, 'fourth', 90);
    writeFileSync(join(secret, '..v2', 'tls.crt'), fourth.cert);
    await waitWhileRunning('the warning about the intermediate pair', router, () => count(/certificate not rotated/) === 2, 30_000);
    const pids = childPids(router.pid);
    expect(pids).toHaveLength(2);
    process.kill(pids[0], 'SIGKILL');
    await waitWhileRunning('the replacement worker ready', router, () => count(/\/readyz answers 200/) === 2, 30_000);
    expect(childPids(router.pid)).not.toContain(pids[0]);
    expect(await freshFingerprints(16)).toEqual([third.fingerprint]);
    expect(await expiry()).toBe(third.notAfter);
    expect(router.stderr()).toMatch(/worker restarted/);
  }, 60_000);
});

describe('certificate rotation whose new workers cannot start', { concurrent: true }, () => {
  let ca: TestCa;
  let mock: MockBackend;
  let router: Proc;
  let port: number;
  let caPem: string;
  let dir: string;
  let first: Pair;
  let second: Pair;

  /** Writes the pair beside the files, then renames both over them (checked together, once). */
  const replacePair = (pair: Pair): void => {
    writeFileSync(join(dir, 'tls.crt.new'), pair.cert);
    writeFileSync(join(dir, 'tls.key.new'), pair.key);
    renameSync(join(dir, 'tls.key.new'), join(dir, 'tls.key'));
    renameSync(join(dir, 'tls.crt.new'), join(dir, 'tls.crt'));
  };

  beforeAll(async () => {
    ca = await createTestCa();
    caPem = readFileSync(ca.caFile, 'utf8');
    [first, second] = [await issue(ca, 'first', 2), await issue(ca, 'second', 30)];
    dir = tempDir('ir-test-tls-');
    writeFileSync(join(dir, 'tls.crt'), first.cert);
    writeFileSync(join(dir, 'tls.key'), first.key);
    mock = await startMock('pod-a');
    port = await serverPort();
    const resourcesFile = join(tempDir(), 'resources.yaml');
    writeFile(resourcesFile, resourcesFor([{ name: 'pod-a', port: mock.port }]));
    router = startProcess([CLI, '--resources', resourcesFile, '--port', String(port), '--host', '127.0.0.1', '--workers', '2'],
      { ACCESS_LOG_OUTPUT: join(dir, 'access.log'), ROUTER_DRAIN_DELAY: '0', ROUTER_TLS_CERT_FILE: join(dir, 'tls.crt'), ROUTER_TLS_KEY_FILE: join(dir, 'tls.key') }, { name: 'router' });
    await waitWhileRunning('the router ready over HTTPS', router, async () => (await call(port, caPem, false, '/readyz')).ok, 30_000);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([router?.kill(), mock?.kill()]);
    ca?.remove();
  });

  const count = (re: RegExp): number => router.stderr().split('\n').filter((l) => re.test(l)).length;
  const fingerprints = async (n: number): Promise<string[]> => {
    const out = new Set<string>();
    for (let i = 0; i < n; i++) {
      const r = await call(port, caPem, false, '/v1/models');
      expect(r.ok).toBe(true);
      out.add(r.fingerprint ?? '');
    }
    return [...out];
  };

  it.sequential('keeps as many workers as configured, and tries the rotation again on its own until it is done', async () => {
    const pids = childPids(router.pid).sort();
    expect(pids).toHaveLength(2);
    // A worker started from now on cannot open its access log: the file's path is a directory.
    renameSync(join(dir, 'access.log'), join(dir, 'access.log.1'));
    mkdirSync(join(dir, 'access.log'));
    replacePair(second);

    await waitWhileRunning('the rotation stopped', router, () => count(/certificate rotation stopped/) === 1, 30_000);
    expect(router.stderr()).toMatch(/certificate rotation stopped: worker \d+, started to replace worker \d+, exited before listening; tried again in 5 s \(or at once when the files change\)/);
    expect(router.stderr()).toMatch(/failed: ACCESS_LOG_OUTPUT: cannot append to ".*access\.log": it is a directory/);
    expect(router.stderr()).toMatch(/worker \d+ exited \(code 1\) before listening; it was started to replace worker \d+ in a certificate rotation, which keeps serving/);
    expect(childPids(router.pid).sort()).toEqual(pids);
    expect(await fingerprints(6)).toEqual([first.fingerprint]);

    await waitWhileRunning('the rotation stopped again', router, () => count(/certificate rotation stopped/) === 2, 30_000);
    expect(router.stderr()).toMatch(/certificate rotation tried again \(try 2\)/);
    expect(router.stderr()).toMatch(/certificate rotation stopped: .*; tried again in 10 s/);
    expect(childPids(router.pid).sort()).toEqual(pids);

    // New workers can start again: the next try (10 s later) is done.
    rmSync(join(dir, 'access.log'), { recursive: true });
    await waitWhileRunning('the rotation done', router, () => count(/certificate rotation done/) === 1, 60_000);
    expect(count(/certificate rotation stopped/)).toBe(2);
    expect(await fingerprints(6)).toEqual([second.fingerprint]);
    await waitWhileRunning('the replaced workers gone', router, () => childPids(router.pid).every((p) => !pids.includes(p)), 30_000);
    expect(childPids(router.pid)).toHaveLength(2);
    expect(existsSync(join(dir, 'access.log'))).toBe(true); // opened by the new workers
    expect(router.stderr()).not.toMatch(/worker restarted|crashing in a loop/);
    expect(router.child.exitCode).toBe(null);
    // Readiness never went off meanwhile.
    expect(count(/\/readyz answers 200/)).toBe(1);
    expect(count(/\/readyz answers 503/)).toBe(0);
  }, 90_000);
});

describe('a renewed pair the HTTPS server cannot load', () => {
  let ca: TestCa;
  let mock: MockBackend;
  let router: Proc;
  let port: number;
  let caPem: string;
  let dir: string;
  let first: Pair;

  beforeAll(async () => {
    ca = await createTestCa();
    caPem = readFileSync(ca.caFile, 'utf8');
    first = await issue(ca, 'kept', 30);
    dir = tempDir('ir-test-tls-');
    writeFileSync(join(dir, 'tls.crt'), first.cert);
    writeFileSync(join(dir, 'tls.key'), first.key);
    ({ router, mock, port } = await httpsRouter(join(dir, 'tls.crt'), join(dir, 'tls.key'), caPem, 1));
  }, 60_000);
  afterAll(async () => {
    await Promise.all([router?.kill(), mock?.kill()]);
    ca?.remove();
  });

  const count = (re: RegExp): number => router.stderr().split('\n').filter((l) => re.test(l)).length;
  const replacePair = (cert: string, key: string): void => {
    writeFileSync(join(dir, 'tls.crt.new'), cert);
    writeFileSync(join(dir, 'tls.key.new'), key);
    renameSync(join(dir, 'tls.key.new'), join(dir, 'tls.key'));
    renameSync(join(dir, 'tls.crt.new'), join(dir, 'tls.crt'));
  };

  it('a damaged second certificate, then an RSA-PSS pair: each refused with a warn, the served pair kept, and a worker restarted after a crash serves it', async () => {
    replacePair(`${first.cert}-----BEGIN CERTIFICATE-----\nAAAAgarbage\n-----END CERTIFICATE-----\n`, first.key);
    await waitWhileRunning('the damaged chain refused', router, () => count(/certificate not rotated: .*certificate 2 of 2/) === 1, 30_000);
    const openssl = (...args: string[]) => execFileP('openssl', args, { cwd: dir });
    await openssl('genpkey', '-algorithm', 'RSA-PSS', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', 'pss.key');
    await openssl('req', '-x509', '-key', 'pss.key', '-subj', '/CN=127.0.0.1', '-days', '2', '-out', 'pss.crt');
    replacePair(readFileSync(join(dir, 'pss.crt'), 'utf8'), readFileSync(join(dir, 'pss.key'), 'utf8'));
    await waitWhileRunning('the RSA-PSS pair refused', router, () => count(/certificate not rotated: .*the HTTPS server \(uWebSockets\.js\) cannot load the pair/) === 1, 30_000);
    expect(count(/certificate rotation: replacing the workers/)).toBe(0);
    expect((await call(port, caPem, false, '/v1/models')).fingerprint).toBe(first.fingerprint);
    // A worker that crashes now is replaced from the pair last found valid, and serves it.
    const [worker] = childPids(router.pid);
    process.kill(worker, 'SIGKILL');
    await waitWhileRunning('the replacement serving', router, async () => count(/worker restarted/) === 1 && (await call(port, caPem, false, '/readyz')).ok, 30_000);
    expect((await call(port, caPem, false, '/v1/models')).fingerprint).toBe(first.fingerprint);
    expect(router.child.exitCode).toBe(null);
  }, 90_000);
});
