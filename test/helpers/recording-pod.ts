import { createServer, type Server } from 'node:http';
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
