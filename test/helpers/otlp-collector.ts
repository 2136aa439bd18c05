/**
 * A mock OpenTelemetry collector: accepts OTLP/HTTP JSON on POST /v1/traces (answers 200 `{}`)
 * and keeps the spans it received, flattened with their resource attributes. Used by the
 * tracing tests and the tracing bench scenario; `keepSpans: false` only counts them.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import type { TLSSocket } from 'node:tls';

export interface CollectedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  status: { code?: number; message?: string };
  /** Attributes as plain values (intValue as number). */
  attrs: Record<string, string | number | boolean | string[]>;
  resource: Record<string, string | number | boolean>;
}

export interface OtlpCollector {
  readonly url: string;
  readonly spans: CollectedSpan[];
  /** Spans received (also when not kept). */
  received(): number;
  /** POSTs received on /v1/traces. */
  requests(): number;
  /** Each POST's content-encoding ('' when none), in order (a gzipped body is read unzipped). */
  encodings(): string[];
  /** Connections the collector accepted (TLS ones once their handshake is done). */
  connections(): number;
  /** With `tls.clientCaFile`: the subject CN of each accepted connection's client certificate, in order. */
  clientNames(): string[];
  /** Closes every open connection (the next export comes on a new one). */
  dropConnections(): Promise<void>;
  close(): Promise<void>;
}

function plain(attrs: { key: string; value: Record<string, unknown> }[] | undefined): Record<string, string | number | boolean | string[]> {
  const out: Record<string, string | number | boolean | string[]> = {};
  for (const a of attrs ?? []) {
    const v = a.value;
    if ('stringValue' in v) out[a.key] = String(v.stringValue);
    else if ('intValue' in v) out[a.key] = Number(v.intValue);
    else if ('doubleValue' in v) out[a.key] = Number(v.doubleValue);
    else if ('boolValue' in v) out[a.key] = Boolean(v.boolValue);
    else if ('arrayValue' in v) out[a.key] = ((v.arrayValue as { values?: { stringValue?: unknown }[] }).values ?? []).map((e) => String(e.stringValue));
  }
  return out;
}

/**
 * `tls`: serve HTTPS with this certificate and key (the client must trust its CA); with
 * `clientCaFile`, only to clients presenting a certificate that CA signed (mutual TLS).
 */
export async function startOtlpCollector(opts: { keepSpans?: boolean; tls?: { certFile: string; keyFile: string; clientCaFile?: string } } = {}): Promise<OtlpCollector> {
  const keep = opts.keepSpans ?? true;
  const spans: CollectedSpan[] = [];
  let received = 0;
  let requests = 0;
  const encodings: string[] = [];
  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      requests++;
      encodings.push(String(req.headers['content-encoding'] ?? ''));
      try {
        const bytes = Buffer.concat(chunks);
        const body = JSON.parse((req.headers['content-encoding'] === 'gzip' ? gunzipSync(bytes) : bytes).toString('utf8'));
        for (const rs of body.resourceSpans ?? []) {
          const resource = plain(rs.resource?.attributes);
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              received++;
              if (keep) spans.push({ ...s, attrs: plain(s.attributes), resource });
            }
          }
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } catch (err) {
        res.writeHead(400).end((err as Error).message);
      }
    });
  };
  const clientCa = opts.tls?.clientCaFile;
  const server: Server = opts.tls === undefined
    ? createServer(onRequest)
    : createHttpsServer({
      cert: readFileSync(opts.tls.certFile),
      key: readFileSync(opts.tls.keyFile),
      ...(clientCa === undefined ? {} : { ca: readFileSync(clientCa), requestCert: true, rejectUnauthorized: true }),
    }, onRequest);
  let connections = 0;
  const clientNames: string[] = [];
  server.on(opts.tls === undefined ? 'connection' : 'secureConnection', (socket: TLSSocket) => {
    connections++;
    if (clientCa !== undefined) clientNames.push(String(socket.getPeerCertificate().subject?.CN ?? ''));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${opts.tls === undefined ? 'http' : 'https'}://127.0.0.1:${port}`,
    spans,
    received: () => received,
    requests: () => requests,
    encodings: () => [...encodings],
    connections: () => connections,
    clientNames: () => [...clientNames],
    dropConnections: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => setTimeout(resolve, 50));
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
