import { X509Certificate } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readListenerTlsPair } from '../../../src/config/listener-tls.js';
import { createTestCa, type TestCa } from '../../helpers/test-ca.js';

/** The checks the primary runs at start and again on each change of the files (a rotation). */
describe('readListenerTlsPair', () => {
  let ca: TestCa;
  let other: TestCa;
  beforeAll(async () => {
    [ca, other] = await Promise.all([createTestCa(), createTestCa()]);
  }, 60_000);
  afterAll(() => {
    ca?.remove();
    other?.remove();
  });

  it('gives the pair as read, with the certificate\'s subject, notAfter and fingerprint', () => {
    const p = readListenerTlsPair(ca.certFile, ca.keyFile);
    const x = new X509Certificate(readFileSync(ca.certFile));
    expect(p.certPem).toBe(readFileSync(ca.certFile, 'utf8'));
    expect(p.keyPem).toBe(readFileSync(ca.keyFile, 'utf8'));
    expect(p.subject).toBe('CN=127.0.0.1');
    expect(p.notAfter.getTime()).toBe(new Date(x.validTo).getTime());
    expect(p.notAfter.getTime()).toBeGreaterThan(Date.now());
    expect(p.fingerprint256).toBe(x.fingerprint256);
  });

  it('refuses a half-written pair, naming the variable, the file and why', () => {
    const empty = join(ca.dir, 'empty.crt');
    writeFileSync(empty, '');
    expect(() => readListenerTlsPair(empty, ca.keyFile)).toThrow(`ROUTER_TLS_CERT_FILE: expected a PEM file of the server certificate; got "${empty}" (it holds no "-----BEGIN …" block)`);
    const cut = join(ca.dir, 'cut.crt');
    const pem = readFileSync(ca.certFile, 'utf8');
    writeFileSync(cut, pem.slice(0, pem.length / 2));
    expect(() => readListenerTlsPair(cut, ca.keyFile)).toThrow(/^ROUTER_TLS_CERT_FILE: expected a PEM file of the server certificate; got ".*cut\.crt" \(/);
    const cutKey = join(ca.dir, 'cut.key');
    const key = readFileSync(ca.keyFile, 'utf8');
    writeFileSync(cutKey, key.slice(0, key.length / 2));
    expect(() => readListenerTlsPair(ca.certFile, cutKey)).toThrow(/^ROUTER_TLS_KEY_FILE: expected a PEM file of a private key without a passphrase; got ".*cut\.key" \(/);
    expect(() => readListenerTlsPair(join(ca.dir, 'missing.crt'), ca.keyFile)).toThrow(/^ROUTER_TLS_CERT_FILE: expected a readable PEM file of the server certificate; got ".*missing\.crt" \(cannot read it: ENOENT/);
  });

  it('refuses a certificate beside another\'s key (a pair written file by file, between the two)', () => {
    expect(() => readListenerTlsPair(ca.certFile, other.keyFile))
      .toThrow(`ROUTER_TLS_KEY_FILE: the key in "${other.keyFile}" is not the key of the certificate in "${ca.certFile}" (ROUTER_TLS_CERT_FILE, CN=127.0.0.1)`);
  });
});
