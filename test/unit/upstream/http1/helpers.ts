/** Test helpers for the HTTP/1.1 client: a collecting handler and raw `net` servers scripted byte by byte. */
import { createServer, type Server, type Socket } from 'node:net';
import type { Http1Handler, Http1Request, Http1RequestOptions } from '../../../../src/upstream/http1/request.js';
import type { Http1Pool } from '../../../../src/upstream/http1/pool.js';

export interface Answer {
  status: number;
  headers: string[];
  body: Buffer;
  trailers: string[] | null;
  error: (Error & { code?: string }) | null;
  /** onData calls (to see that bodies arrive in pieces). */
  pieces: number;
}

/** Collects one answer; `onData` can be overridden to pause. */
export class Collector implements Http1Handler {
  readonly answer: Answer = { status: 0, headers: [], body: Buffer.alloc(0), trailers: null, error: null, pieces: 0 };
  readonly parts: Buffer[] = [];
  received = 0;
  readonly done: Promise<Answer>;
  private resolve!: (a: Answer) => void;
  ended = 0;
  constructor() {
    this.done = new Promise((r) => { this.resolve = r; });
  }
  onHeaders(status: number, headers: string[]): boolean {
    this.answer.status = status;
    this.answer.headers = headers;
    return true;
  }
  onData(chunk: Buffer, _req: Http1Request): boolean {
    this.parts.push(Buffer.from(chunk));
    this.received += chunk.length;
    this.answer.pieces++;
    return true;
  }
  onComplete(trailers: string[] | null): void {
    this.ended++;
    this.answer.trailers = trailers;
    this.answer.body = Buffer.concat(this.parts);
    this.resolve(this.answer);
  }
  onError(err: Error): void {
    this.ended++;
    this.answer.error = err;
    this.answer.body = Buffer.concat(this.parts);
    this.resolve(this.answer);
  }
}

export function post(path = '/v1/x', body: Buffer | string | null = '{"a":1}', extra: Partial<Http1RequestOptions> = {}): Http1RequestOptions {
  return { method: 'POST', path, headers: ['content-type', 'application/json'], body: body === null ? null : Buffer.from(body), ...extra };
}

export async function request(pool: Http1Pool, opts: Http1RequestOptions = post()): Promise<Answer> {
  const c = new Collector();
  pool.dispatch(opts, c);
  return c.done;
}

/** Reads whole requests (head + content-length body) from a socket and calls `onRequest` for each. */
export function onRequests(socket: Socket, onRequest: (head: string, body: Buffer, index: number) => void): void {
  let buf = Buffer.alloc(0);
  let index = 0;
  socket.on('data', (d: Buffer) => {
    buf = Buffer.concat([buf, d]);
    for (;;) {
      const end = buf.indexOf('\r\n\r\n');
      if (end === -1) return;
      const head = buf.toString('latin1', 0, end);
      const m = /\r\ncontent-length: (\d+)/i.exec(head);
      const len = m === null ? 0 : Number(m[1]);
      if (buf.length < end + 4 + len) return;
      const body = buf.subarray(end + 4, end + 4 + len);
      buf = buf.subarray(end + 4 + len);
      onRequest(head, body, index++);
    }
  });
}

export interface Scripted {
  readonly port: number;
  readonly sockets: Socket[];
  /** Requests seen: head text and body, in order of arrival. */
  readonly requests: { head: string; body: Buffer }[];
  close(): Promise<void>;
}

/**
 * A raw server: for each request, `answer(socket, requestIndexOnConnection, connectionIndex, head, body)`
 * writes whatever bytes it likes.
 */
export async function scriptedServer(
  answer: (socket: Socket, index: number, connection: number, head: string, body: Buffer) => void,
): Promise<Scripted> {
  const sockets: Socket[] = [];
  const requests: { head: string; body: Buffer }[] = [];
  const server: Server = createServer((socket) => {
    const connection = sockets.length;
    sockets.push(socket);
    socket.setNoDelay(true);
    socket.on('error', () => { /* the client may reset */ });
    onRequests(socket, (head, body, index) => {
      requests.push({ head, body });
      answer(socket, index, connection, head, body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    port, sockets, requests,
    close: () => new Promise<void>((r) => {
      for (const s of sockets) s.destroy();
      server.close(() => r());
    }),
  };
}

export const tick = (ms = 0): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Waits until `cond()` holds (polling); fails after `ms`. For events, not for timing. */
export async function until(cond: () => boolean, what: string, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await tick(2);
  }
}

/** Header value by case-insensitive name from a flat array. */
export function header(headers: string[], name: string): string | undefined {
  for (let i = 0; i < headers.length; i += 2) if (headers[i].toLowerCase() === name) return headers[i + 1];
  return undefined;
}
