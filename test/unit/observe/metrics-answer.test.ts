/**
 * A worker's answer to GET /metrics as the text comes from the primary (metrics-answer.ts), on
 * the uWS build the router loads: whole with its length, or in parts (chunked); a draining worker
 * says `connection: close` with the headers, never inside the chunked body.
 */
import { connect } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { loadUws } from '../../../src/http/uws.js';
import { metricsHandler } from '../../../src/observe/metrics-answer.js';
import type { MetricsTextSink, WorkerMetricsLink } from '../../../src/observe/metrics-cluster.js';
import type { RouterMetrics } from '../../../src/observe/metrics.js';

const uws = loadUws();
const listening: unknown[] = [];
afterAll(() => {
  for (const ls of listening) uws.us_listen_socket_close(ls as never);
});

/** A router worker's /metrics whose primary sends `parts` (the last ends the text), a few ms apart. */
async function serve(parts: string[], draining: boolean): Promise<number> {
  const link = {
    collect(sink: MetricsTextSink): void {
      parts.forEach((p, i) => setTimeout(() => (i === parts.length - 1 ? sink.end(p) : sink.part(p)), 5 * (i + 1)));
    },
  } as unknown as WorkerMetricsLink;
  const handler = metricsHandler({ contentType: 'text/plain; version=0.0.4; charset=utf-8' } as RouterMetrics, link);
  const app = uws.App().get('/metrics', (res) => handler(res, false, () => draining));
  return new Promise((resolve) => app.listen('127.0.0.1', 0, (ls) => {
    listening.push(ls);
    resolve(uws.us_socket_local_port(ls));
  }));
}

/** The raw answer on a kept-alive connection (the client does not ask to close), until the server closes it or 500 ms pass. */
function raw(port: number): Promise<string> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1', () => s.write('GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n'));
    let buf = '';
    s.setEncoding('utf8').on('data', (d: string) => { buf += d; });
    const timer = setTimeout(() => { s.destroy(); resolve(buf); }, 500);
    s.on('close', () => { clearTimeout(timer); resolve(buf); });
  });
}

describe('the answer to GET /metrics', () => {
  it('a text in parts is chunked; a draining worker says connection: close with the headers and the body reads whole', async () => {
    for (const draining of [false, true]) {
      const port = await serve(['a 1\n', 'b 2\n', 'c 3\n'], draining);
      const r = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect(r.headers.get('transfer-encoding')).toBe('chunked');
      expect(r.headers.get('connection')).toBe(draining ? 'close' : null);
      expect(await r.text()).toBe('a 1\nb 2\nc 3\n');
      const text = await raw(port);
      const head = text.slice(0, text.indexOf('\r\n\r\n'));
      const body = text.slice(text.indexOf('\r\n\r\n') + 4);
      expect(/connection: close/i.test(head)).toBe(draining);
      expect(body).not.toMatch(/connection/i);
      expect(body).toBe('4\r\na 1\n\r\n4\r\nb 2\n\r\n4\r\nc 3\n\r\n0\r\n\r\n');
    }
  });

  it('a text in one part is written whole, with its length', async () => {
    const port = await serve(['a 1\nb 2\n'], false);
    const r = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(r.headers.get('content-length')).toBe('8');
    expect(await r.text()).toBe('a 1\nb 2\n');
  });
});
