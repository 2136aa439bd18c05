/**
 * A mock OpenTelemetry collector: accepts OTLP/HTTP JSON on POST /v1/traces (answers 200 `{}`)
 * and keeps the spans it received, flattened with their resource attributes. Used by the
 * tracing tests and the tracing bench scenario; `keepSpans: false` only counts them.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

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
  attrs: Record<string, string | number | boolean>;
  resource: Record<string, string | number | boolean>;
}

export interface OtlpCollector {
  readonly url: string;
  readonly spans: CollectedSpan[];
  /** Spans received (also when not kept). */
  received(): number;
  /** POSTs received on /v1/traces. */
  requests(): number;
  close(): Promise<void>;
}

function plain(attrs: { key: string; value: Record<string, unknown> }[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const a of attrs ?? []) {
    const v = a.value;
    if ('stringValue' in v) out[a.key] = String(v.stringValue);
    else if ('intValue' in v) out[a.key] = Number(v.intValue);
    else if ('doubleValue' in v) out[a.key] = Number(v.doubleValue);
    else if ('boolValue' in v) out[a.key] = Boolean(v.boolValue);
  }
  return out;
}

export async function startOtlpCollector(opts: { keepSpans?: boolean } = {}): Promise<OtlpCollector> {
  const keep = opts.keepSpans ?? true;
  const spans: CollectedSpan[] = [];
  let received = 0;
  let requests = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      requests++;
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
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
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    received: () => received,
    requests: () => requests,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
