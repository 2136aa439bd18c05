import type { AppOptions } from 'uWebSockets.js';
import type { ListenerTls } from '../config/listener-tls.js';

/**
 * The TLS 1.2 cipher suites the HTTPS listener offers: Mozilla's "intermediate" list (forward
 * secrecy, AEAD only). uWebSockets.js's own default also offers suites without forward secrecy
 * (AES128-SHA, AES256-GCM-SHA384) and CBC with SHA-1, which scanners and compliance checks flag.
 * TLS 1.3 has its own suites (all forward-secret); TLS 1.0 and 1.1 are refused by the library.
 */
export const LISTENER_CIPHERS = [
  'ECDHE-ECDSA-AES128-GCM-SHA256', 'ECDHE-RSA-AES128-GCM-SHA256', 'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384', 'ECDHE-ECDSA-CHACHA20-POLY1305', 'ECDHE-RSA-CHACHA20-POLY1305',
  'DHE-RSA-AES128-GCM-SHA256', 'DHE-RSA-AES256-GCM-SHA384', 'DHE-RSA-CHACHA20-POLY1305',
].join(':');

/** The options of the HTTPS listener's app for the pair in `tls` (the workers', and the primary's check of a pair). */
export function sslAppOptions(tls: ListenerTls): AppOptions {
  return { cert_file_name: tls.certFile, key_file_name: tls.keyFile, ssl_ciphers: LISTENER_CIPHERS };
}
