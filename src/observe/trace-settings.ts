/**
 * Tracing settings from the standard OpenTelemetry environment variables, validated once and
 * frozen (docs/tracing.md). Tracing is opt-in: it is on only when OTEL_TRACES_EXPORTER is
 * "otlp" or an OTLP endpoint variable is set, and OTEL_SDK_DISABLED is not "true".
 */
import { alternatives, badSetting } from '../setting-message.js';
import { validateHeaderName, validateHeaderValue } from 'node:http';
import { otlpTlsFiles, readOtlpTls, type OtlpTlsFiles, type OtlpTlsMaterial } from './otlp-tls.js';
import { otlpVariable } from './otlp-variable.js';

export type TraceSampler =
  | 'always_on' | 'always_off' | 'traceidratio'
  | 'parentbased_always_on' | 'parentbased_always_off' | 'parentbased_traceidratio';

const SAMPLERS: readonly TraceSampler[] = [
  'always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio',
];

export interface TraceSettings {
  /** Full URL spans are POSTed to (OTLP/HTTP, JSON encoding). */
  readonly endpoint: string;
  /** Extra request headers of every export (OTEL_EXPORTER_OTLP_[TRACES_]HEADERS), flat [name, value, …]. */
  readonly headers: readonly string[];
  readonly serviceName: string;
  /** OTEL_RESOURCE_ATTRIBUTES plus service.name, as [key, value] pairs. */
  readonly resource: readonly (readonly [string, string])[];
  readonly sampler: TraceSampler;
  /** Ratio of the traceidratio samplers, 0..1. */
  readonly ratio: number;
  /** Bound on ended spans waiting for export; spans beyond it are dropped and counted. */
  readonly maxQueueSize: number;
  readonly maxBatchSize: number;
  /** Longest a span waits for its batch to fill before it is sent, ms. */
  readonly scheduleDelayMs: number;
  /** Bound on one export request, ms. */
  readonly timeoutMs: number;
  /** OTEL_EXPORTER_OTLP_[TRACES_]COMPRESSION: each export's body gzipped (`content-encoding: gzip`), or sent as it is. */
  readonly compression: 'gzip' | 'none';
  /** The exporter's CA and client certificate files, and what they held at start; null: none set. */
  readonly tls: { readonly files: OtlpTlsFiles; readonly material: OtlpTlsMaterial } | null;
}

export const DEFAULT_SERVICE_NAME = 'inference-router';

function set(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

function intSetting(env: NodeJS.ProcessEnv, name: string, dflt: number, min: number, max: number): number {
  const raw = set(env, name);
  if (raw === undefined) return dflt;
  const n = /^[0-9]+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new Error(badSetting(name, `an integer from ${min} to ${max}`, raw));
  }
  return n;
}

function url(name: string, raw: string): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new Error(badSetting(name, 'an http:// or https:// URL', raw));
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(badSetting(name, 'an http:// or https:// URL', raw));
  // A user or password in the URL would go out with every export as Basic credentials, unasked
  // for: they belong in a header, where the operator chooses the scheme. Not shown (a secret).
  if (u.username !== '' || u.password !== '') {
    throw new Error(`${name} must not hold a user or password (user:password@); give them as a header, e.g. OTEL_EXPORTER_OTLP_HEADERS=authorization=Basic%20<base64>`);
  }
  return u;
}

/** The traces URL: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, else OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces. */
function endpoint(env: NodeJS.ProcessEnv): string {
  const traces = set(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  if (traces !== undefined) return url('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', traces).href;
  const base = set(env, 'OTEL_EXPORTER_OTLP_ENDPOINT') ?? 'http://localhost:4318';
  const u = url('OTEL_EXPORTER_OTLP_ENDPOINT', base);
  u.pathname = `${u.pathname.replace(/\/+$/, '')}/v1/traces`;
  return u.href;
}

/** `k1=v1,k2=v2` with percent-encoded values (the W3C baggage shape the OTel spec uses). */
function keyValues(name: string, raw: string | undefined): [string, string][] {
  if (raw === undefined) return [];
  const out: [string, string][] = [];
  for (const part of raw.split(',')) {
    if (part.trim() === '') continue;
    const eq = part.indexOf('=');
    const k = eq > 0 ? part.slice(0, eq).trim() : '';
    if (k === '') throw new Error(badSetting(name, 'a list of key=value pairs separated by commas', raw));
    let v: string;
    try {
      v = decodeURIComponent(part.slice(eq + 1).trim());
    } catch {
      throw new Error(`${name}: the value of ${k} is not valid percent-encoding`);
    }
    out.push([k, v]);
  }
  return out;
}

/**
 * The export headers, checked as node:http will check them on every export (otlp-post.ts): a name
 * that is no HTTP token or a value with a control character (but tab) or a character above U+00FF
 * would fail every export, each counted as export_failed and nothing else. The value is not shown
 * (it is often a secret).
 */
function exportHeaders(name: string, raw: string | undefined): string[] {
  const out: string[] = [];
  for (const [k, v] of keyValues(name, raw)) {
    try {
      validateHeaderName(k);
    } catch {
      throw new Error(`${name}: ${JSON.stringify(k)} is not a valid HTTP header name`);
    }
    try {
      validateHeaderValue(k, v);
    } catch {
      throw new Error(`${name}: the value of ${k} is not a valid HTTP header value (no line breaks or other control characters, no characters above U+00FF; percent-encode what is not text)`);
    }
    out.push(k.toLowerCase(), v);
  }
  return out;
}

function protocol(env: NodeJS.ProcessEnv): void {
  const name = otlpVariable((n) => set(env, n), 'PROTOCOL');
  const raw = set(env, name);
  if (raw !== undefined && raw !== 'http/json') throw new Error(badSetting(name, 'http/json (the router exports OTLP/HTTP with JSON encoding)', raw));
}

function compression(env: NodeJS.ProcessEnv): 'gzip' | 'none' {
  const name = otlpVariable((n) => set(env, n), 'COMPRESSION');
  const raw = set(env, name);
  if (raw === undefined || raw === 'none') return 'none';
  if (raw === 'gzip') return 'gzip';
  throw new Error(badSetting(name, 'gzip or none', raw));
}

function enabled(env: NodeJS.ProcessEnv): boolean {
  // Read case-insensitively, as the OpenTelemetry specification reads its booleans (TRUE, False).
  const disabled = set(env, 'OTEL_SDK_DISABLED')?.toLowerCase();
  if (disabled !== undefined && disabled !== 'true' && disabled !== 'false') {
    throw new Error(badSetting('OTEL_SDK_DISABLED', 'true or false', disabled));
  }
  const exporter = set(env, 'OTEL_TRACES_EXPORTER');
  if (exporter !== undefined && exporter !== 'otlp' && exporter !== 'none') {
    throw new Error(badSetting('OTEL_TRACES_EXPORTER', 'otlp or none (the router has no other exporter)', exporter));
  }
  if (disabled === 'true' || exporter === 'none') return false;
  return exporter === 'otlp' || set(env, 'OTEL_EXPORTER_OTLP_ENDPOINT') !== undefined || set(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT') !== undefined;
}

function sampler(env: NodeJS.ProcessEnv): { sampler: TraceSampler; ratio: number } {
  const raw = set(env, 'OTEL_TRACES_SAMPLER') ?? 'parentbased_always_on';
  if (!(SAMPLERS as readonly string[]).includes(raw)) {
    throw new Error(badSetting('OTEL_TRACES_SAMPLER', alternatives(SAMPLERS), raw));
  }
  const arg = set(env, 'OTEL_TRACES_SAMPLER_ARG');
  let ratio = 1;
  if (arg !== undefined && raw.endsWith('traceidratio')) {
    ratio = /^(0|1|0?\.[0-9]+|1\.0*)$/.test(arg) ? Number(arg) : Number.NaN;
    if (!(ratio >= 0 && ratio <= 1)) throw new Error(badSetting('OTEL_TRACES_SAMPLER_ARG', 'a ratio from 0 to 1', arg));
  }
  return { sampler: raw as TraceSampler, ratio };
}

/**
 * Returns null when tracing is off. Reads OTEL_SDK_DISABLED, OTEL_TRACES_EXPORTER,
 * OTEL_EXPORTER_OTLP_[TRACES_]{ENDPOINT,HEADERS,TIMEOUT,PROTOCOL,COMPRESSION,CERTIFICATE,
 * CLIENT_CERTIFICATE,CLIENT_KEY} (the files read and checked, otlp-tls.ts), OTEL_SERVICE_NAME,
 * OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER(_ARG), OTEL_BSP_*. Throws naming the variable.
 */
export function parseTraceSettings(env: NodeJS.ProcessEnv): TraceSettings | null {
  if (!enabled(env)) return null;
  protocol(env);
  const resource = keyValues('OTEL_RESOURCE_ATTRIBUTES', set(env, 'OTEL_RESOURCE_ATTRIBUTES')).filter(([k]) => k !== 'service.name');
  const fromResource = keyValues('OTEL_RESOURCE_ATTRIBUTES', set(env, 'OTEL_RESOURCE_ATTRIBUTES')).find(([k]) => k === 'service.name');
  const serviceName = set(env, 'OTEL_SERVICE_NAME') ?? fromResource?.[1] ?? DEFAULT_SERVICE_NAME;
  const headersName = otlpVariable((n) => set(env, n), 'HEADERS');
  const headers = exportHeaders(headersName, set(env, headersName));
  const timeoutName = otlpVariable((n) => set(env, n), 'TIMEOUT');
  const maxQueueSize = intSetting(env, 'OTEL_BSP_MAX_QUEUE_SIZE', 2048, 1, 1_000_000);
  const maxBatchSize = intSetting(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 512, 1, 1_000_000);
  if (maxBatchSize > maxQueueSize) {
    throw new Error(`OTEL_BSP_MAX_EXPORT_BATCH_SIZE (${maxBatchSize}) must not be larger than OTEL_BSP_MAX_QUEUE_SIZE (${maxQueueSize})`);
  }
  const traces = endpoint(env);
  const tlsFiles = otlpTlsFiles((name) => set(env, name), traces);
  return Object.freeze({
    endpoint: traces,
    headers: Object.freeze(headers),
    serviceName,
    resource: Object.freeze([['service.name', serviceName] as const, ...resource]),
    ...sampler(env),
    maxQueueSize,
    maxBatchSize,
    scheduleDelayMs: intSetting(env, 'OTEL_BSP_SCHEDULE_DELAY', 5000, 1, 3_600_000),
    timeoutMs: intSetting(env, timeoutName, 10_000, 1, 3_600_000),
    compression: compression(env),
    tls: tlsFiles === null ? null : Object.freeze({ files: tlsFiles, material: readOtlpTls(tlsFiles) }),
  });
}
