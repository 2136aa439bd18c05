import { certificateBundle, checkKeyOf, firstCertificate, privateKey, readPem, subjectOf } from './pem-files.js';

/** The certificate and key the router's listener serves HTTPS with (ROUTER_TLS_CERT_FILE, ROUTER_TLS_KEY_FILE). */
export interface ListenerTls {
  /** PEM file of the server certificate, then the intermediates a client needs (a Kubernetes TLS secret's tls.crt). */
  readonly certFile: string;
  /** PEM file of its private key, not encrypted (tls.key). */
  readonly keyFile: string;
}

/** A certificate and key that passed the checks (readListenerTlsPair), as read. */
export interface ListenerTlsPair {
  readonly certPem: string;
  readonly keyPem: string;
  /** The server certificate's (the file's first): subject on one line, notAfter, SHA-256 fingerprint. */
  readonly subject: string;
  readonly notAfter: Date;
  readonly fingerprint256: string;
}

/** The listener's TLS setting: its files, and the pair they held when the setting was read. */
export interface ListenerTlsSetting extends ListenerTls {
  readonly pair: ListenerTlsPair;
}

/**
 * The listener's TLS files from the environment, or null when neither is given (plain HTTP).
 * Validated at start (readListenerTlsPair), as the workers read them when they open the listener;
 * the pair read then is kept (the primary serves it first, primary/tls-served-files.ts).
 * Throws an Error naming the variable and the file (`usageError` makes it the caller's usage error:
 * exit 2).
 */
export function listenerTls(env: NodeJS.ProcessEnv, usageError: (message: string) => Error): ListenerTlsSetting | null {
  const certFile = env.ROUTER_TLS_CERT_FILE || null;
  const keyFile = env.ROUTER_TLS_KEY_FILE || null;
  if (certFile === null && keyFile === null) return null;
  if (certFile === null || keyFile === null) {
    const [given, missing] = certFile === null ? ['ROUTER_TLS_KEY_FILE', 'ROUTER_TLS_CERT_FILE'] : ['ROUTER_TLS_CERT_FILE', 'ROUTER_TLS_KEY_FILE'];
    throw usageError(`${given} is set but ${missing} is not: HTTPS needs both the certificate and its key (neither: plain HTTP)`);
  }
  let pair: ListenerTlsPair;
  try {
    pair = readListenerTlsPair(certFile, keyFile);
  } catch (err) {
    throw usageError((err as Error).message);
  }
  return Object.freeze({ certFile, keyFile, pair });
}

/**
 * Reads and checks the pair, at start and again when the files change (primary/tls-rotation.ts):
 * each readable, the certificate a PEM certificate, the key a PEM private key without a
 * passphrase, and the key the certificate's. Throws an Error naming the variable, the file and why.
 */
export function readListenerTlsPair(certFile: string, keyFile: string): ListenerTlsPair {
  const cert = readPem('ROUTER_TLS_CERT_FILE', certFile, 'a PEM file of the server certificate');
  const x509 = firstCertificate('ROUTER_TLS_CERT_FILE', certFile, cert, 'a PEM file of the server certificate');
  // The chain after it too: the HTTPS server reads every certificate block, and refuses the file for a damaged one.
  certificateBundle('ROUTER_TLS_CERT_FILE', certFile, cert, 'a PEM file of the server certificate');
  const keyPem = readPem('ROUTER_TLS_KEY_FILE', keyFile, 'a PEM file of the private key');
  const key = privateKey('ROUTER_TLS_KEY_FILE', keyFile, keyPem);
  checkKeyOf('ROUTER_TLS_KEY_FILE', keyFile, key, 'ROUTER_TLS_CERT_FILE', certFile, x509);
  return Object.freeze({ certPem: cert, keyPem, subject: subjectOf(x509), notAfter: new Date(x509.validTo), fingerprint256: x509.fingerprint256 });
}
