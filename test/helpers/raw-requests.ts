import { createServer, type Server, type Socket } from 'node:net';
import { listenLocal } from './processes.js';

/**
 * Calls `each` for every whole HTTP/1.1 request (its head and its content-length body) that
 * arrives on `socket`, as a raw pod reads them; bytes of a request still to come are kept.
 */
export function onWholeRequests(socket: Socket, each: () => void): void {
  let seen = '';
  socket.on('data', (d: Buffer) => {
    seen += d.toString('latin1');
    for (;;) {
      const head = seen.indexOf('\r\n\r\n');
      if (head === -1) return;
      const length = Number(/content-length: *(\d+)/i.exec(seen.slice(0, head))?.[1] ?? 0);
      if (seen.length < head + 4 + length) return;
      seen = seen.slice(head + 4 + length);
      each();
      if (socket.destroyed) return;
    }
  });
}

/** A raw pod on 127.0.0.1: `answer(socket)` for each whole request; close() ends its connections and stops it. */
export async function rawPod(answer: (socket: Socket) => void): Promise<{ port: number; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => {});
    onWholeRequests(s, () => answer(s));
  });
  const port = await listenLocal(server);
  return {
    port,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

/** `s` as one chunk of a chunked body (its size in hex, the bytes, CRLF after each). */
export function chunk(s: string): string {
  return `${Buffer.byteLength(s).toString(16)}\r\n${s}\r\n`;
}
