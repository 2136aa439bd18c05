/**
 * GET of a pod's /metrics text for the scraper (pod-metrics-scraper.ts), over `node:http` with one
 * kept-alive connection per pod. `fetch` did the same job, but its timers tick every 499 ms for as
 * long as any of its connections is kept alive, which woke an otherwise idle primary twice a
 * second (docs/internals/performance-changes.md, "Idle wake-ups"); Node's own timers here are
 * cleared with each answer.
 *
 * A request sent on a kept-alive connection that the pod closed at the same moment (its idle
 * timeout) fails with a reset before any answer: it is sent once more on a new connection, as
 * Node's documentation advises, so that race is not reported as a failed scrape. Nor is an answer
 * that came within the timeout while the primary's event loop was busy, and is read after it.
 */
import { Agent, request, type ClientRequest, type IncomingMessage } from 'node:http';
import { Buffer } from 'node:buffer';
import { setReadDeadline } from '../timers.js';

/** The longest /metrics text read (vLLM's is tens of KB). */
export const MAX_METRICS_BYTES = 4 * 1024 * 1024;

/** One connection per pod, kept between scrapes. */
const AGENT = new Agent({ keepAlive: true, maxSockets: 1 });

/** Reads the pod's /metrics text; rejects on a connection failure, a status other than 200, a body over MAX_METRICS_BYTES, or no whole answer within `timeoutMs`. */
export function fetchMetricsText(url: string, timeoutMs: number, agent: Agent = AGENT): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    let settled = false;
    let req: ClientRequest;
    const timer = setReadDeadline(() => {
      if (!settled) req.destroy(new Error(`no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    const settle = (err: Error | null, text = ''): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err === null) resolve(text);
      else reject(err);
    };
    const send = (retried: boolean): void => {
      req = request(url, { agent, headers: { accept: 'text/plain' } }, (res) => read(req, res, settle));
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (!retried && req.reusedSocket && err.code === 'ECONNRESET') send(true);
        else settle(err);
      });
      req.end();
    };
    send(false);
  });
}

function read(req: ClientRequest, res: IncomingMessage, settle: (err: Error | null, text?: string) => void): void {
  if (res.statusCode !== 200) {
    res.resume();
    settle(new Error(`status ${res.statusCode}`));
    return;
  }
  const length = Number(res.headers['content-length'] ?? 0);
  if (length > MAX_METRICS_BYTES) {
    req.destroy();
    settle(new Error(`body of ${length} bytes is over ${MAX_METRICS_BYTES}`));
    return;
  }
  const chunks: Buffer[] = [];
  let bytes = 0;
  res.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
    if (bytes > MAX_METRICS_BYTES) {
      req.destroy();
      settle(new Error(`body over ${MAX_METRICS_BYTES} bytes`));
    } else {
      chunks.push(chunk);
    }
  });
  res.on('end', () => settle(null, Buffer.concat(chunks).toString('utf8')));
  res.on('error', (err) => settle(err));
  res.on('close', () => {
    if (!res.complete) settle(new Error('the pod closed the connection before the answer ended'));
  });
}
