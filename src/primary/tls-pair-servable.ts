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

/** Null when uWebSockets.js opens an HTTPS app with `files`; else the message that says it cannot. */
export function uwsPairRefusal(files: ListenerTls): string | null {
  const uws = loadUws();
  try {
    const app = uws.SSLApp(sslAppOptions(files));
    (app as { close?: () => void }).close?.();
    return null;
  } catch (err) {
    return `ROUTER_TLS_CERT_FILE, ROUTER_TLS_KEY_FILE: the HTTPS server (uWebSockets.js) cannot load the pair in "${files.certFile}" and "${files.keyFile}" ` +
      `(${(err as Error).message}): every certificate of the file must be whole, and the key RSA (not RSA-PSS), EC or Ed25519`;
  }
}
