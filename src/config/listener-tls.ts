import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { badSetting } from '../setting-message.js';

/** The certificate and key the router's listener serves HTTPS with (ROUTER_TLS_CERT_FILE, ROUTER_TLS_KEY_FILE). */
export interface ListenerTls {
  /** PEM file of the server certificate, then the intermediates a client needs (a Kubernetes TLS secret's tls.crt). */
  readonly certFile: string;
  /** PEM file of its private key, not encrypted (tls.key). */
  readonly keyFile: string;
}

/**
 * The listener's TLS files from the environment, or null when neither is given (plain HTTP).
 * Validated once at start, as the workers read them when they open the listener: both given, each
 * readable, the certificate a PEM certificate, the key a PEM private key without a passphrase, and
 * the key the certificate's. Throws an Error naming the variable and the file (`usageError` makes it
 * the caller's usage error: exit 2).
 */
export function listenerTls(env: NodeJS.ProcessEnv, usageError: (message: string) => Error): ListenerTls | null {
  const certFile = env.ROUTER_TLS_CERT_FILE || null;
  const keyFile = env.ROUTER_TLS_KEY_FILE || null;
  if (certFile === null && keyFile === null) return null;
  if (certFile === null || keyFile === null) {
    const [given, missing] = certFile === null ? ['ROUTER_TLS_KEY_FILE', 'ROUTER_TLS_CERT_FILE'] : ['ROUTER_TLS_CERT_FILE', 'ROUTER_TLS_KEY_FILE'];
    return fail(usageError, `${given} is set but ${missing} is not: HTTPS needs both the certificate and its key (neither: plain HTTP)`);
  }
  const cert = readPem('ROUTER_TLS_CERT_FILE', certFile, 'a PEM file of the server certificate', usageError);
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(cert);
  } catch (err) {
    return fail(usageError, `${badSetting('ROUTER_TLS_CERT_FILE', 'a PEM file of the server certificate', certFile)} (${detail(err)})`);
  }
  const keyText = readPem('ROUTER_TLS_KEY_FILE', keyFile, 'a PEM file of the private key', usageError);
  let key: KeyObject;
  try {
    key = createPrivateKey(keyText);
  } catch (err) {
    const encrypted = /ENCRYPTED/.test(keyText) || (err as { code?: string }).code === 'ERR_MISSING_PASSPHRASE';
    return fail(usageError, `${badSetting('ROUTER_TLS_KEY_FILE', 'a PEM file of a private key without a passphrase', keyFile)} (${encrypted ? 'the key is encrypted: give it decrypted, as a Kubernetes TLS secret holds it' : detail(err)})`);
  }
  if (!x509.checkPrivateKey(key)) {
    return fail(usageError, `ROUTER_TLS_KEY_FILE: the key in "${keyFile}" is not the key of the certificate in "${certFile}" (ROUTER_TLS_CERT_FILE, ${x509.subject.replace(/\n/g, ', ')})`);
  }
  return Object.freeze({ certFile, keyFile });
}

function readPem(name: string, file: string, what: string, usageError: (message: string) => Error): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    return fail(usageError, `${badSetting(name, `a readable ${what.slice(2)}`, file)} (cannot read it: ${detail(err)})`);
  }
  if (!text.includes('-----BEGIN ')) return fail(usageError, `${badSetting(name, what, file)} (it holds no "-----BEGIN …" block)`);
  return text;
}

function detail(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function fail(usageError: (message: string) => Error, message: string): never {
  throw usageError(message);
}
