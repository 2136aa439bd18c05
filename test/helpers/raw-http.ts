import { connect } from 'node:net';
import { expect } from 'vitest';

/**
 * Exact request bytes over raw sockets, and what the router's front does with requests its uWS
 * build cannot read.
 */

export interface RawResult {
  /** Everything the router sent, as latin1 text. */
  text: string;
  /** The router closed the connection (false: still open when we stopped waiting). */
  closed: boolean;
  /** Milliseconds from the connection's start until it closed, or until we stopped waiting. */
  ms: number;
}

/**
 * Sends `parts` on one connection (each part one write, `gapMs` apart), then waits until the
 * router closes the connection or `waitMs` passed. `end`: half-close after the last part.
 */
export function raw(port: number, parts: string[], opts: { waitMs?: number; gapMs?: number; end?: boolean } = {}): Promise<RawResult> {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const s = connect(port, '127.0.0.1');
    let text = '';
    let done = false;
    const finish = (closed: boolean): void => {
      if (done) return;
      done = true;
      clearTimeout(giveUp);
      s.destroy();
      resolve({ text, closed, ms: Date.now() - t0 });
    };
    s.on('data', (d) => { text += d.toString('latin1'); });
    s.on('close', () => finish(true));
    s.on('error', () => finish(true));
    s.on('connect', async () => {
      for (let i = 0; i < parts.length; i++) {
        if (i > 0 && opts.gapMs) await new Promise((r) => setTimeout(r, opts.gapMs));
        if (!s.destroyed) s.write(parts[i]);
      }
      if (opts.end && !s.destroyed) s.end();
    });
    const giveUp = setTimeout(() => finish(false), opts.waitMs ?? 5000);
  });
}

/** The uWS build the router loaded, from its build_info metric ("uws-20.57", "uws-20.30"). */
export async function uwsBuildOf(routerUrl: string): Promise<string> {
  const metrics = await (await fetch(`${routerUrl}/metrics`)).text();
  return /uws="([^"]+)"/.exec(metrics)![1];
}

/** Requests of a kind one uWS build or the other does not read, each on its own connection. */
export interface UnreadableResults {
  /** An HTTP/1.0 request (ApacheBench, nginx's proxy_pass by default, some health checkers). */
  http10: RawResult;
  /** An HTTP/1.1 request without a Host header. */
  noHost: RawResult;
  /** A chunked upload whose chunk has an extension (`2;name=value`), which RFC 9112 lets a client send. */
  chunkExtension: RawResult;
}

/**
 * Sends the three requests together (request ids `<id>-http10`, `<id>-no-host`,
 * `<id>-chunk-extension`) and waits past the front's 10 s idle timeout for each to close.
 */
export async function sendUnreadable(port: number, body: string, id: string): Promise<UnreadableResults> {
  const length = Buffer.byteLength(body);
  const [http10, noHost, chunkExtension] = await Promise.all([
    raw(port, [`POST /v1/completions HTTP/1.0\r\nHost: router\r\nx-request-id: ${id}-http10\r\ncontent-type: application/json\r\nContent-Length: ${length}\r\n\r\n${body}`], { waitMs: 25_000 }),
    raw(port, [`POST /v1/completions HTTP/1.1\r\nx-request-id: ${id}-no-host\r\ncontent-type: application/json\r\nContent-Length: ${length}\r\n\r\n${body}`], { waitMs: 25_000 }),
    raw(port, [`POST /v1/completions HTTP/1.1\r\nHost: router\r\nx-request-id: ${id}-chunk-extension\r\ncontent-type: application/json\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n${length.toString(16)};name=value\r\n${body}\r\n0\r\n\r\n`], { waitMs: 25_000 }),
  ]);
  return { http10, noHost, chunkExtension };
}

/**
 * What each build does with them (docs/configuration.md, "HTTP limits"). 20.57: HTTP/1.0 gets its
 * own 505 page, no Host and the chunk extension its 400 page, each with a close. 20.30: none is
 * answered; HTTP/1.0 waits for the idle timeout to close it, and the other two are closed at once.
 */
export function expectAsBuildAnswers(build: string, r: UnreadableResults): void {
  if (build === 'uws-20.57') {
    expect(r.http10.text).toMatch(/^HTTP\/1\.1 505 HTTP Version Not Supported\r\n[\s\S]*This server does not support HTTP\/1\.0/);
    expect(r.http10.closed).toBe(true);
    expect(r.http10.ms).toBeLessThan(5_000);
    expect(r.noHost.text).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(r.noHost.closed).toBe(true);
    expect(r.noHost.ms).toBeLessThan(5_000);
    expect(r.chunkExtension.text).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(r.chunkExtension.closed).toBe(true);
    return;
  }
  expect(build).toBe('uws-20.30');
  for (const [what, x] of Object.entries(r)) {
    expect(x.text, what).toBe('');
    expect(x.closed, what).toBe(true);
  }
  expect(r.noHost.ms).toBeLessThan(5_000);
  expect(r.http10.ms).toBeGreaterThan(5_000);
  expect(r.chunkExtension.ms).toBeLessThan(5_000);
}
