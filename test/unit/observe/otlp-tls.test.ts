import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { copyFileSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { otlpTlsFiles, otlpTlsStamp, readOtlpTls, type OtlpTlsFiles } from '../../../src/observe/otlp-tls.js';
import { parseTraceSettings } from '../../../src/observe/trace-settings.js';
import { CollectorPost } from '../../../src/observe/otlp-post.js';
import { createTestCa, issueClientCertificate, type TestCa } from '../../helpers/test-ca.js';
import { startOtlpCollector, type OtlpCollector } from '../../helpers/otlp-collector.js';

const HTTPS = 'https://collector.example:4318/v1/traces';
const vars = (env: Record<string, string>) => (name: string): string | undefined => env[name];

describe('otlpTlsFiles: which variables name the exporter\'s TLS files', () => {
  it('none set: null', () => {
    expect(otlpTlsFiles(vars({}), HTTPS)).toBeNull();
  });

  it('each TRACES_ variable wins over the general one on its own', () => {
    expect(otlpTlsFiles(vars({
      OTEL_EXPORTER_OTLP_CERTIFICATE: '/general/ca.pem',
      OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE: '/traces/ca.pem',
      OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE: '/general/client.crt',
      OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY: '/traces/client.key',
    }), HTTPS)).toEqual({
      ca: { variable: 'OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE', file: '/traces/ca.pem' },
      cert: { variable: 'OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE', file: '/general/client.crt' },
      key: { variable: 'OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY', file: '/traces/client.key' },
    });
  });

  it('a client certificate without its key, or a key without its certificate, is refused', () => {
    expect(() => otlpTlsFiles(vars({ OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE: '/c.crt' }), HTTPS))
      .toThrow('OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE is set but OTEL_EXPORTER_OTLP_CLIENT_KEY (or its TRACES_ form) is not: a client certificate goes with its key');
    expect(() => otlpTlsFiles(vars({ OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY: '/c.key', OTEL_EXPORTER_OTLP_CERTIFICATE: '/ca.pem' }), HTTPS))
      .toThrow('OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY is set but OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE (or its TRACES_ form) is not');
  });

  it('TLS files for an http:// endpoint are refused, naming each variable set and the endpoint', () => {
    expect(() => otlpTlsFiles(vars({ OTEL_EXPORTER_OTLP_CERTIFICATE: '/ca.pem' }), 'http://collector:4318/v1/traces?x=1'))
      .toThrow('OTEL_EXPORTER_OTLP_CERTIFICATE: TLS files for an endpoint that is not https:// (http://collector:4318/v1/traces); spans would go in the clear: give an https:// endpoint, or unset them');
  });
});

describe('the exporter\'s TLS files read and checked', () => {
  let ca: TestCa;
  let other: TestCa;
  let clientA: { certFile: string; keyFile: string };
  let clientB: { certFile: string; keyFile: string };
  let collector: OtlpCollector;
  const posts: CollectorPost[] = [];
  beforeAll(async () => {
    [ca, other] = await Promise.all([createTestCa(), createTestCa()]);
    [clientA, clientB] = await Promise.all([issueClientCertificate(ca, 'client-a'), issueClientCertificate(ca, 'client-b')]);
    collector = await startOtlpCollector({ keepSpans: false, tls: { certFile: ca.certFile, keyFile: ca.keyFile, clientCaFile: ca.caFile } });
  });
  afterEach(() => {
    for (const p of posts.splice(0)) p.close();
  });
  afterAll(async () => {
    await collector?.close();
    ca?.remove();
    other?.remove();
  });

  const files = (f: { ca?: string; cert?: string; key?: string }): OtlpTlsFiles => ({
    ca: f.ca === undefined ? null : { variable: 'OTEL_EXPORTER_OTLP_CERTIFICATE', file: f.ca },
    cert: f.cert === undefined ? null : { variable: 'OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE', file: f.cert },
    key: f.key === undefined ? null : { variable: 'OTEL_EXPORTER_OTLP_CLIENT_KEY', file: f.key },
  });
  const postWith = (f: OtlpTlsFiles | null, log?: (level: string, m: string) => void): CollectorPost => {
    const post = new CollectorPost(`${collector.url}/v1/traces`, { 'content-type': 'application/json' }, 5000,
      { tls: f === null ? null : { files: f, material: readOtlpTls(f) }, log: log ?? null });
    posts.push(post);
    return post;
  };
  const body = Buffer.from('{"resourceSpans":[]}');

  it('parseTraceSettings reads them at start: the CA file\'s text, the client pair, what they are', () => {
    const s = parseTraceSettings({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'https://127.0.0.1:4318',
      OTEL_EXPORTER_OTLP_CERTIFICATE: ca.caFile,
      OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE: clientA.certFile,
      OTEL_EXPORTER_OTLP_CLIENT_KEY: clientA.keyFile,
    })!;
    expect(s.tls!.material.ca).toBe(readFileSync(ca.caFile, 'utf8'));
    expect(s.tls!.material.cert).toBe(readFileSync(clientA.certFile, 'utf8'));
    expect(s.tls!.material.key).toBe(readFileSync(clientA.keyFile, 'utf8'));
    expect(s.tls!.material.summary).toMatch(new RegExp(`^the collector's certificate checked against 1 CA certificate of ${ca.caFile}; client certificate CN=client-a \\(valid until \\d{4}-\\d\\d-\\d\\dT[0-9:.]+Z\\)$`));
    expect(parseTraceSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://127.0.0.1:4318' })!.tls).toBeNull();
  });

  it('a CA bundle counts every certificate; a file that cannot be read, holds no PEM, or a broken certificate is refused naming the variable and the file', () => {
    const bundle = join(ca.dir, 'bundle.pem');
    writeFileSync(bundle, readFileSync(ca.caFile, 'utf8') + readFileSync(other.caFile, 'utf8'));
    expect(readOtlpTls(files({ ca: bundle })).summary).toBe(`the collector's certificate checked against 2 CA certificates of ${bundle}`);
    const missing = join(ca.dir, 'absent.pem');
    expect(() => readOtlpTls(files({ ca: missing })))
      .toThrow(`OTEL_EXPORTER_OTLP_CERTIFICATE: expected a readable PEM file of CA certificates; got ${JSON.stringify(missing)} (cannot read it: ENOENT`);
    const text = join(ca.dir, 'text.pem');
    writeFileSync(text, 'not a certificate\n');
    expect(() => readOtlpTls(files({ ca: text })))
      .toThrow(`OTEL_EXPORTER_OTLP_CERTIFICATE: expected a PEM file of CA certificates; got ${JSON.stringify(text)} (it holds no "-----BEGIN …" block)`);
    const broken = join(ca.dir, 'broken.pem');
    const pem = readFileSync(other.caFile, 'utf8');
    writeFileSync(broken, readFileSync(ca.caFile, 'utf8') + pem.replace(/\n[A-Za-z0-9+/]{20}/, '\nAAAAAAAAAAAAAAAAAAAA'));
    expect(() => readOtlpTls(files({ ca: broken }))).toThrow(`OTEL_EXPORTER_OTLP_CERTIFICATE: expected a PEM file of CA certificates; got ${JSON.stringify(broken)} (certificate 2 of 2: `);
  });

  it('a client key that is not the certificate\'s, or is encrypted, is refused naming both files', () => {
    expect(() => readOtlpTls(files({ cert: clientA.certFile, key: clientB.keyFile })))
      .toThrow(`OTEL_EXPORTER_OTLP_CLIENT_KEY: the key in "${clientB.keyFile}" is not the key of the certificate in "${clientA.certFile}" (OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE, CN=client-a)`);
    const encrypted = join(ca.dir, 'encrypted.key');
    execFileSync('openssl', ['pkey', '-in', clientA.keyFile, '-aes256', '-passout', 'pass:secret', '-out', encrypted]);
    expect(() => readOtlpTls(files({ cert: clientA.certFile, key: encrypted })))
      .toThrow('the key is encrypted: give it decrypted');
  });

  it('trusts the CA file in place of Node\'s list and presents the client certificate; without either the collector is not reached', async () => {
    const ok = postWith(files({ ca: ca.caFile, cert: clientA.certFile, key: clientA.keyFile }));
    expect(await ok.send(body)).toEqual({ status: 200, failure: null });
    expect(collector.clientNames().at(-1)).toBe('client-a');
    // Node's own list does not hold the test CA.
    const untrusted = await postWith(files({ cert: clientA.certFile, key: clientA.keyFile })).send(body);
    expect(untrusted.status).toBe(0);
    expect(untrusted.failure).toMatch(/self[- ]signed certificate|unable to (get|verify)/);
    // Another CA trusted: the collector's certificate is not taken.
    const wrongCa = await postWith(files({ ca: other.caFile, cert: clientA.certFile, key: clientA.keyFile })).send(body);
    expect(wrongCa.status).toBe(0);
    // No client certificate: the collector refuses the handshake.
    const noClient = await postWith(files({ ca: ca.caFile })).send(body);
    expect(noClient.status).toBe(0);
    expect(collector.clientNames().length).toBe(1);
  });

  it('takes up files that changed at the next export (a Kubernetes secret\'s rename, a write in place), and keeps the last good ones when the new ones fail the checks', async () => {
    const dir = join(ca.dir, 'mounted');
    mkdirSync(dir, { recursive: true });
    const certFile = join(dir, 'tls.crt');
    const keyFile = join(dir, 'tls.key');
    const caFile = join(dir, 'ca.crt');
    copyFileSync(clientA.certFile, certFile);
    copyFileSync(clientA.keyFile, keyFile);
    copyFileSync(ca.caFile, caFile);
    const f = files({ ca: caFile, cert: certFile, key: keyFile });
    const logs: string[] = [];
    const post = postWith(f, (level, m) => logs.push(`${level}: ${m}`));
    const stamp = otlpTlsStamp(f);
    expect(await post.send(body)).toEqual({ status: 200, failure: null });
    expect(collector.clientNames().at(-1)).toBe('client-a');
    expect(logs).toEqual([]);

    // The pair replaced as Kubernetes does: new files renamed into place.
    copyFileSync(clientB.certFile, `${certFile}.new`);
    copyFileSync(clientB.keyFile, `${keyFile}.new`);
    renameSync(`${certFile}.new`, certFile);
    renameSync(`${keyFile}.new`, keyFile);
    expect(otlpTlsStamp(f)).not.toBe(stamp);
    const seen = collector.clientNames().length;
    expect(await post.send(body)).toEqual({ status: 200, failure: null });
    expect(collector.clientNames().slice(seen)).toEqual(['client-b']);
    expect(logs).toEqual([expect.stringMatching(/^info: the exporter's TLS files changed; new connections use them: .*client certificate CN=client-b/)]);

    // A key that is not the certificate's, written in place: logged, the pair before stays in use.
    writeFileSync(keyFile, readFileSync(clientA.keyFile));
    await collector.dropConnections();
    const before = collector.clientNames().length;
    expect(await post.send(body)).toEqual({ status: 200, failure: null });
    expect(collector.clientNames().slice(before)).toEqual(['client-b']);
    expect(logs[1]).toBe(`warn: the exporter's TLS files changed but cannot be used, the ones read before stay in use: OTEL_EXPORTER_OTLP_CLIENT_KEY: the key in "${keyFile}" is not the key of the certificate in "${certFile}" (OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE, CN=client-b)`);
    // Not logged again while the files stay as they are.
    expect(await post.send(body)).toEqual({ status: 200, failure: null });
    expect(logs).toHaveLength(2);
    // Read anew (a restart), the same files stop the router at start.
    expect(() => postWith(f)).toThrow('OTEL_EXPORTER_OTLP_CLIENT_KEY: the key in');
  });
});
