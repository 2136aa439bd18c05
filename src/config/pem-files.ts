/**
 * PEM files named by a setting (the listener's certificate and key, the trace exporter's CA and
 * client pair), read and checked the one way: each error names the variable, the file and why.
 */
import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { badSetting } from '../setting-message.js';

/** The text of `file` (variable `name`), which must hold a PEM block; `what` is e.g. "a PEM file of the server certificate". */
export function readPem(name: string, file: string, what: string): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`${badSetting(name, `a readable ${what.slice(2)}`, file)} (cannot read it: ${detail(err)})`);
  }
  if (!text.includes('-----BEGIN ')) throw new Error(`${badSetting(name, what, file)} (it holds no "-----BEGIN …" block)`);
  return text;
}

/** The first certificate of `text`, read from `file` (variable `name`). */
export function firstCertificate(name: string, file: string, text: string, what: string): X509Certificate {
  try {
    return new X509Certificate(text);
  } catch (err) {
    throw new Error(`${badSetting(name, what, file)} (${detail(err)})`);
  }
}

const CERTIFICATE_BLOCK = /-----BEGIN CERTIFICATE-----[^-]*-----END CERTIFICATE-----/g;

/** Every certificate of a bundle (a CA file): at least one, each parsed; the file's other blocks are ignored. */
export function certificateBundle(name: string, file: string, text: string, what: string): X509Certificate[] {
  const blocks = text.match(CERTIFICATE_BLOCK) ?? [];
  if (blocks.length === 0) throw new Error(`${badSetting(name, what, file)} (it holds no "-----BEGIN CERTIFICATE-----" block)`);
  return blocks.map((block, i) => {
    try {
      return new X509Certificate(block);
    } catch (err) {
      throw new Error(`${badSetting(name, what, file)} (certificate ${i + 1} of ${blocks.length}: ${detail(err)})`);
    }
  });
}

/** The private key of `text`, read from `file` (variable `name`); an encrypted key is refused, saying so. */
export function privateKey(name: string, file: string, text: string): KeyObject {
  try {
    return createPrivateKey(text);
  } catch (err) {
    const encrypted = /ENCRYPTED/.test(text) || (err as { code?: string }).code === 'ERR_MISSING_PASSPHRASE';
    throw new Error(`${badSetting(name, 'a PEM file of a private key without a passphrase', file)} (${encrypted ? 'the key is encrypted: give it decrypted, as a Kubernetes TLS secret holds it' : detail(err)})`);
  }
}

/** The certificate's subject on one line. */
export function subjectOf(x509: X509Certificate): string {
  return x509.subject.replace(/\n/g, ', ');
}

/** Throws unless `key` (variable `keyName`, file `keyFile`) is the key of `x509` (variable `certName`, file `certFile`). */
export function checkKeyOf(keyName: string, keyFile: string, key: KeyObject, certName: string, certFile: string, x509: X509Certificate): void {
  if (!x509.checkPrivateKey(key)) {
    throw new Error(`${keyName}: the key in "${keyFile}" is not the key of the certificate in "${certFile}" (${certName}, ${subjectOf(x509)})`);
  }
}

function detail(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
