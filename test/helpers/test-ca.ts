/**
 * A throwaway certificate authority and a server certificate it signed, made with the openssl
 * command line in a temporary directory, for TLS tests (redis-server --tls-port, the trace
 * exporter's collector); client certificates it signs for mutual TLS (issueClientCertificate).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const execFileP = promisify(execFile);

export interface TestCa {
  readonly dir: string;
  /** PEM of the CA certificate: what a client must trust. */
  readonly caFile: string;
  /** Server certificate (CN 127.0.0.1; SAN IP 127.0.0.1 and DNS localhost) and its key. */
  readonly certFile: string;
  readonly keyFile: string;
  remove(): void;
}

/** Creates the CA and the server certificate (RSA 2048, valid 2 days). */
export async function createTestCa(): Promise<TestCa> {
  const dir = mkdtempSync(join(tmpdir(), 'ir-test-ca-'));
  const f = (name: string): string => join(dir, name);
  const openssl = (...args: string[]): Promise<unknown> => execFileP('openssl', args, { cwd: dir });
  try {
    await openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=inference-router test CA',
      '-keyout', f('ca.key'), '-out', f('ca.crt'));
    await openssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=127.0.0.1', '-keyout', f('server.key'), '-out', f('server.csr'));
    writeFileSync(f('server.ext'), 'subjectAltName = IP:127.0.0.1, DNS:localhost\nextendedKeyUsage = serverAuth\n');
    await openssl('x509', '-req', '-in', f('server.csr'), '-CA', f('ca.crt'), '-CAkey', f('ca.key'), '-CAcreateserial',
      '-days', '2', '-extfile', f('server.ext'), '-out', f('server.crt'));
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    dir,
    caFile: f('ca.crt'),
    certFile: f('server.crt'),
    keyFile: f('server.key'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** A client certificate (CN `name`, extendedKeyUsage clientAuth) `ca` signed, and its key, in `ca.dir`. */
export async function issueClientCertificate(ca: TestCa, name: string): Promise<{ certFile: string; keyFile: string }> {
  const f = (file: string): string => join(ca.dir, file);
  const openssl = (...args: string[]): Promise<unknown> => execFileP('openssl', args, { cwd: ca.dir });
  await openssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${name}`, '-keyout', f(`${name}.key`), '-out', f(`${name}.csr`));
  writeFileSync(f(`${name}.ext`), 'extendedKeyUsage = clientAuth\n');
  await openssl('x509', '-req', '-in', f(`${name}.csr`), '-CA', f('ca.crt'), '-CAkey', f('ca.key'), '-CAcreateserial',
    '-days', '2', '-extfile', f(`${name}.ext`), '-out', f(`${name}.crt`));
  return { certFile: f(`${name}.crt`), keyFile: f(`${name}.key`) };
}
