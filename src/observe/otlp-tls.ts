/**
 * The trace exporter's TLS files, from the OpenTelemetry variables (docs/tracing.md): the CA
 * certificates a collector's certificate is checked against, in place of Node's list
 * (OTEL_EXPORTER_OTLP_[TRACES_]CERTIFICATE), and a client certificate with its key for mutual TLS
 * (OTEL_EXPORTER_OTLP_[TRACES_]CLIENT_CERTIFICATE, _CLIENT_KEY); the traces variable wins over the
 * general one, each on its own. Read and checked at start, and again when a file changes
 * (otlp-post.ts), so a rotated certificate is taken up without a restart.
 */
import { statSync } from 'node:fs';
import { certificateBundle, checkKeyOf, firstCertificate, privateKey, readPem, subjectOf } from '../config/pem-files.js';
import { otlpVariable } from './otlp-variable.js';

/** A file named by a variable. */
export interface NamedFile {
  readonly variable: string;
  readonly file: string;
}

/** Which files the exporter's TLS reads (at least one is set). */
export interface OtlpTlsFiles {
  readonly ca: NamedFile | null;
  readonly cert: NamedFile | null;
  readonly key: NamedFile | null;
}

/** What the files held, checked: as node:https's `ca`, `cert` and `key` options. */
export interface OtlpTlsMaterial {
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
  /** For the operational log: what is trusted and presented. */
  readonly summary: string;
}

/** The file of the setting's variable in effect (otlp-variable.ts), or null when neither is set. */
function named(value: (name: string) => string | undefined, suffix: string): NamedFile | null {
  const variable = otlpVariable(value, suffix);
  const file = value(variable);
  return file === undefined ? null : { variable, file };
}

/**
 * The files the variables name (`value` gives a variable's trimmed value, undefined when unset),
 * or null when none is set. Throws when only one of the client pair is set, or when any is set
 * for an http:// endpoint (which would send spans in the clear while the operator meant TLS).
 */
export function otlpTlsFiles(value: (name: string) => string | undefined, endpoint: string): OtlpTlsFiles | null {
  const ca = named(value, 'CERTIFICATE');
  const cert = named(value, 'CLIENT_CERTIFICATE');
  const key = named(value, 'CLIENT_KEY');
  if (ca === null && cert === null && key === null) return null;
  if ((cert === null) !== (key === null)) {
    const [given, missing] = cert === null ? [key!.variable, 'OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE'] : [cert.variable, 'OTEL_EXPORTER_OTLP_CLIENT_KEY'];
    throw new Error(`${given} is set but ${missing} (or its TRACES_ form) is not: a client certificate goes with its key`);
  }
  const u = new URL(endpoint);
  if (u.protocol !== 'https:') {
    const set = [ca, cert, key].filter((f) => f !== null).map((f) => f.variable).join(', ');
    throw new Error(`${set}: TLS files for an endpoint that is not https:// (${u.origin}${u.pathname}); spans would go in the clear: give an https:// endpoint, or unset them`);
  }
  return Object.freeze({ ca, cert, key });
}

/** Reads and checks the files: the CA file's every certificate, the client certificate and its key, the key the certificate's. */
export function readOtlpTls(files: OtlpTlsFiles): OtlpTlsMaterial {
  const out: { ca?: string; cert?: string; key?: string } = {};
  const parts: string[] = [];
  if (files.ca !== null) {
    const what = 'a PEM file of CA certificates';
    out.ca = readPem(files.ca.variable, files.ca.file, what);
    const n = certificateBundle(files.ca.variable, files.ca.file, out.ca, what).length;
    parts.push(`the collector's certificate checked against ${n} CA certificate${n === 1 ? '' : 's'} of ${files.ca.file}`);
  }
  if (files.cert !== null && files.key !== null) {
    const what = 'a PEM file of the client certificate';
    out.cert = readPem(files.cert.variable, files.cert.file, what);
    const x509 = firstCertificate(files.cert.variable, files.cert.file, out.cert, what);
    out.key = readPem(files.key.variable, files.key.file, 'a PEM file of the private key');
    checkKeyOf(files.key.variable, files.key.file, privateKey(files.key.variable, files.key.file, out.key), files.cert.variable, files.cert.file, x509);
    parts.push(`client certificate ${subjectOf(x509)} (valid until ${new Date(x509.validTo).toISOString()})`);
  }
  return Object.freeze({ ...out, summary: parts.join('; ') });
}

/** What identifies the files' contents now (device, inode, size, modification time of each), to notice a change. */
export function otlpTlsStamp(files: OtlpTlsFiles): string {
  let stamp = '';
  for (const f of [files.ca, files.cert, files.key]) {
    if (f === null) continue;
    try {
      const s = statSync(f.file);
      stamp += `${s.dev}:${s.ino}:${s.size}:${s.mtimeMs};`;
    } catch (err) {
      stamp += `${(err as NodeJS.ErrnoException).code ?? 'error'};`;
    }
  }
  return stamp;
}
