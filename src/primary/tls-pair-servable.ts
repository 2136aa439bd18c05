/**
 * Whether the HTTPS server can serve a certificate and key pair, asked of the HTTP server itself:
 * uWebSockets.js loads the files with its own TLS library, which refuses some pairs Node's crypto
 * reads well (an RSA-PSS key, a damaged certificate after the first in the chain). A pair the
 * workers cannot open would have them fail one after another at start ("App construction failed")
 * until the router stops, or, renewed, be rolled out and then kill the instance at the next worker
 * restart. Checked by the primary at start and before each rotation (tls-file-watch.ts).
 */
import type { ListenerTls } from '../config/listener-tls.js';
import { loadUws } from '../http/uws.js';
import { sslAppOptions } from '../http/tls-options.js';

/** Throws, saying why, unless uWebSockets.js opens an HTTPS app with `files`. */
export function checkServable(files: ListenerTls): void {
  const uws = loadUws();
  let app: ReturnType<typeof uws.SSLApp>;
  try {
    app = uws.SSLApp(sslAppOptions(files));
  } catch (err) {
    throw new Error(`ROUTER_TLS_CERT_FILE, ROUTER_TLS_KEY_FILE: the HTTPS server (uWebSockets.js) cannot load the pair in "${files.certFile}" and "${files.keyFile}" ` +
      `(${(err as Error).message}): every certificate of the file must be whole, and the key RSA (not RSA-PSS), EC or Ed25519`);
  }
  (app as { close?: () => void }).close?.();
}
