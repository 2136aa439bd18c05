import { createServer, type Server, type Socket } from 'node:net';
import { once } from 'node:events';

/**
 * A TCP server on loopback whose connections are not read until `read()`, so that a writer's
 * kernel buffers fill and it stops taking writes whole; `received[i]` holds connection i's bytes
 * (the server takes connections in their order).
 */
export async function pausedServer(): Promise<{ server: Server; received: Buffer[][]; read: () => void }> {
  const received: Buffer[][] = [];
  const peers: Socket[] = [];
  const server = createServer({ pauseOnConnect: true }, (peer) => {
    const chunks: Buffer[] = [];
    received.push(chunks);
    peers.push(peer);
    peer.on('data', (c: Buffer) => chunks.push(c));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, received, read: () => peers.forEach((p) => p.resume()) };
}
