import { createServer, type Server } from 'node:http';
import { connect, createServer as createNetServer } from 'node:net';
import { afterAll, beforeAll } from 'vitest';
import { listenLocal, resourcesFor, startLoggedRouter, type LoggedRouter, type RouterOptions } from './processes.js';

/** What the recording pod answers: a chat completion without usage (the router's own count is logged). */
export const RECORDING_POD_ANSWER = JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }] });

/**
 * A model pod on a loopback port that keeps every request body it is sent, as text, in `received`,
 * and answers each with `answer` (200, JSON): what the end-to-end tests of the parser's shortcuts
 * compare the forwarded bytes against.
 */
export async function startRecordingPod(received: string[], answer = RECORDING_POD_ANSWER): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (d: Buffer) => parts.push(d));
    req.on('end', () => {
      received.push(Buffer.concat(parts).toString('utf8'));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(answer);
    });
  });
  return { server, port: await listenLocal(server) };
}

/**
 * For a describe block: a built router (one worker, JSON access log) in front of a recording pod,
 * started before its tests and stopped after them. `router` is there once they run; `received`
 * holds the bodies the pod was sent. `opts` as startLoggedRouter's (more settings in `env`).
 */
export function routerOnRecordingPod(opts: RouterOptions = {}): { readonly router: LoggedRouter; readonly received: string[] } {
  const received: string[] = [];
  let router: LoggedRouter | null = null;
  let server: Server | null = null;
  beforeAll(async () => {
    const pod = await startRecordingPod(received);
    server = pod.server;
    router = await startLoggedRouter(resourcesFor([{ name: 'pod-a', port: pod.port }]), opts);
  });
  afterAll(async () => {
    await router?.kill();
    server?.closeAllConnections();
    await new Promise<void>((r) => (server === null ? r() : server.close(() => r())));
  });
  return {
    received,
    get router(): LoggedRouter {
      if (router === null) throw new Error('the router starts in beforeAll: read it in a test');
      return router;
    },
  };
}

/**
 * A pod on a raw socket (node:http refuses bytes above 0x7f in a request head) that answers `{}`
 * to every request and keeps each request's head, as bytes, in `heads`, in order.
 */
export async function startHeadRecordingPod(): Promise<{ port: number; heads: Buffer[]; close: () => void }> {
  const heads: Buffer[] = [];
  const pod = createNetServer((s) => {
    let got = Buffer.alloc(0);
    s.on('error', () => {});
    s.on('data', (d: Buffer) => {
      got = Buffer.concat([got, d]);
      const end = got.indexOf('\r\n\r\n');
      const length = /content-length: (\d+)/.exec(got.subarray(0, end).toString('latin1'));
      if (end < 0 || length === null || got.length < end + 4 + Number(length[1])) return;
      heads.push(got.subarray(0, end));
      got = got.subarray(end + 4 + Number(length[1]));
      s.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}');
    });
  });
  return { port: await listenLocal(pod), heads, close: () => pod.close() };
}

/** Whether `raw` holds a whole answer with a content-length. */
export function wholeAnswer(raw: string): boolean {
  const end = raw.indexOf('\r\n\r\n');
  const length = /\r\ncontent-length: (\d+)/i.exec(raw.slice(0, end));
  return end >= 0 && length !== null && raw.length >= end + 4 + Number(length[1]);
}

/**
 * Writes `bytes` (a whole request) to the router at `url` over a raw socket; the answer's text
 * (latin1) once `until` says it came (by default the head recording pod's `{}`).
 */
export async function rawRequest(url: string, bytes: Buffer, until: (raw: string) => boolean = (r) => r.endsWith('{}')): Promise<string> {
  const u = new URL(url);
  const socket = connect(Number(u.port), u.hostname);
  socket.on('error', () => {});
  let raw = '';
  socket.setEncoding('latin1');
  const answered = new Promise<void>((r) => socket.on('data', (d: string) => {
    raw += d;
    if (until(raw)) r();
  }));
  socket.write(bytes);
  await answered;
  socket.destroy();
  return raw;
}
