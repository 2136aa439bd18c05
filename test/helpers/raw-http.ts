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

/** How long the requests below wait for their connection to close: past the front's 10 s idle timeout, with room. */
const WAIT_PAST_IDLE = { waitMs: 25_000 };

/** Requests of a kind one uWS build or the other does not read, each on its own connection. */
export interface UnreadableResults {
  /** An HTTP/1.0 request (ApacheBench, nginx's proxy_pass by default, some health checkers). */
  http10: RawResult;
  /** An HTTP/1.1 request without a Host header. */
  noHost: RawResult;
  /** A chunked upload whose chunk has an extension (`2;name=value`), which RFC 9112 lets a client send. */
  chunkExtension: RawResult;
  /** A chunked upload with a trailer field after its last chunk, which RFC 9112 lets a client send too. */
  trailer: RawResult;
}

/**
 * Sends the four requests together (request ids `<id>-http10`, `<id>-no-host`,
 * `<id>-chunk-extension`, `<id>-trailer`) and waits past the front's 10 s idle timeout for each to close.
 */
export async function sendUnreadable(port: number, body: string, id: string): Promise<UnreadableResults> {
  const length = Buffer.byteLength(body);
  const [http10, noHost, chunkExtension, trailer] = await Promise.all([
    raw(port, [`POST /v1/completions HTTP/1.0\r\nHost: router\r\nx-request-id: ${id}-http10\r\ncontent-type: application/json\r\nContent-Length: ${length}\r\n\r\n${body}`], WAIT_PAST_IDLE),
    raw(port, [`POST /v1/completions HTTP/1.1\r\nx-request-id: ${id}-no-host\r\ncontent-type: application/json\r\nContent-Length: ${length}\r\n\r\n${body}`], WAIT_PAST_IDLE),
    raw(port, [`POST /v1/completions HTTP/1.1\r\nHost: router\r\nx-request-id: ${id}-chunk-extension\r\ncontent-type: application/json\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n${length.toString(16)};name=value\r\n${body}\r\n0\r\n\r\n`], WAIT_PAST_IDLE),
    raw(port, [`POST /v1/completions HTTP/1.1\r\nHost: router\r\nx-request-id: ${id}-trailer\r\ncontent-type: application/json\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n${length.toString(16)}\r\n${body}\r\n0\r\nx-trailer: 1\r\n\r\n`], WAIT_PAST_IDLE),
  ]);
  return { http10, noHost, chunkExtension, trailer };
}

/**
 * What each build does with them (docs/configuration.md, "HTTP limits"). 20.57: HTTP/1.0 gets its
 * own 505 page, no Host and the chunk extension its 400 page, each with a close; the trailer is
 * read as the start of another request (505 and a close, which the router takes for pipelining).
 * 20.30: the first three are not answered (HTTP/1.0 waits for the idle timeout to close it, the
 * other two are closed at once); the upload with a trailer is read and answered (200).
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
    expect(r.trailer.text).toMatch(/^HTTP\/1\.1 505 HTTP Version Not Supported\r\n/);
    expect(r.trailer.closed).toBe(true);
    return;
  }
  expect(build).toBe('uws-20.30');
  expect(r.trailer.text).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
  for (const [what, x] of Object.entries({ http10: r.http10, noHost: r.noHost, chunkExtension: r.chunkExtension })) {
    expect(x.text, what).toBe('');
    expect(x.closed, what).toBe(true);
  }
  expect(r.noHost.ms).toBeLessThan(5_000);
  expect(r.http10.ms).toBeGreaterThan(5_000);
  expect(r.chunkExtension.ms).toBeLessThan(5_000);
}

/** The most header lines each build reads (the request line not counted). */
export const MAX_HEADER_LINES: Record<string, number> = { 'uws-20.30': 48, 'uws-20.57': 98 };

/** A GET of an inference path (answered 405 by the router itself) with `lines` header lines. */
function withHeaderLines(id: string, lines: number): string {
  const extra = Array.from({ length: lines - 4 }, (_, i) => `x-extra-${i}: v\r\n`).join('');
  return `GET /v1/completions HTTP/1.1\r\nHost: router\r\nx-request-id: ${id}\r\n${extra}Connection: close\r\nContent-Length: 0\r\n\r\n`;
}

/** Heads at and past a build's limits, each on its own connection. */
export interface BeyondLimitsResults {
  /** MAX_HEADER_LINES header lines (request id `<id>-most`). */
  most: RawResult;
  /** One line more (`<id>-one-more`). */
  oneMore: RawResult;
  /** A request target in absolute form, as sent to a forward proxy (`<id>-absolute`). */
  absolute: RawResult;
  /** `OPTIONS *`. */
  asterisk: RawResult;
}

/** Sends the four heads together and waits past the front's 10 s idle timeout for each to close. */
export async function sendBeyondLimits(port: number, build: string, id: string): Promise<BeyondLimitsResults> {
  const max = MAX_HEADER_LINES[build];
  const [most, oneMore, absolute, asterisk] = await Promise.all([
    raw(port, [withHeaderLines(`${id}-most`, max)], WAIT_PAST_IDLE),
    raw(port, [withHeaderLines(`${id}-one-more`, max + 1)], WAIT_PAST_IDLE),
    raw(port, [`POST http://router/v1/completions HTTP/1.1\r\nHost: router\r\nx-request-id: ${id}-absolute\r\nContent-Length: 0\r\n\r\n`], WAIT_PAST_IDLE),
    raw(port, ['OPTIONS * HTTP/1.1\r\nHost: router\r\n\r\n'], WAIT_PAST_IDLE),
  ]);
  return { most, oneMore, absolute, asterisk };
}

/**
 * What each build does with them (docs/configuration.md, "HTTP limits"): the most header lines are
 * read (the router answers the GET 405). 20.57: one line more gets its 431 page, the absolute form
 * and `OPTIONS *` its 505 page, each with a close at once. 20.30: none of the three is answered,
 * and the idle timeout closes their connections.
 */
export function expectAsBuildLimits(build: string, r: BeyondLimitsResults): void {
  expect(r.most.text).toMatch(/^HTTP\/1\.1 405 /);
  if (build === 'uws-20.57') {
    expect(r.oneMore.text).toMatch(/^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/);
    expect(r.absolute.text).toMatch(/^HTTP\/1\.1 505 HTTP Version Not Supported\r\n/);
    expect(r.asterisk.text).toMatch(/^HTTP\/1\.1 505 HTTP Version Not Supported\r\n/);
    for (const x of [r.oneMore, r.absolute, r.asterisk]) {
      expect(x.closed).toBe(true);
      expect(x.ms).toBeLessThan(5_000);
    }
    return;
  }
  expect(build).toBe('uws-20.30');
  for (const [what, x] of Object.entries({ oneMore: r.oneMore, absolute: r.absolute, asterisk: r.asterisk })) {
    expect(x.text, what).toBe('');
    expect(x.closed, what).toBe(true);
    expect(x.ms, what).toBeGreaterThan(5_000);
  }
}
