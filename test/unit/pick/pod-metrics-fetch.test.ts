/**
 * The scraper's GET of a pod's /metrics against real node:http servers: the text, the failures it
 * names, one kept-alive connection reused between scrapes, and a connection the pod closed
 * between two scrapes.
 */
import { createServer, Agent, type Server, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Server as TcpServer } from 'node:net';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { fetchMetricsText, MAX_METRICS_BYTES } from '../../../src/pick/pod-metrics-fetch.js';
import { busyAfterThisTurn } from '../../helpers/busy-loop.js';

const servers: Server[] = [];
const agents: Agent[] = [];
afterEach(async () => {
  for (const a of agents.splice(0)) a.destroy();
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => { s.closeAllConnections(); s.close(r); })));
});

/** A server answering with `handler`, counting its connections; its URL's /metrics. */
async function pod(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ url: string; server: Server; connections: () => number }> {
  let connections = 0;
  const server = createServer(handler);
  server.on('connection', () => { connections++; });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`, server, connections: () => connections };
}

function agent(): Agent {
  const a = new Agent({ keepAlive: true, maxSockets: 1 });
  agents.push(a);
  return a;
}

const TEXT = '# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting 3\n';

describe('fetchMetricsText', () => {
  it('reads the text, and reuses one kept-alive connection for the next scrapes', async () => {
    const p = await pod((_req, res) => res.end(TEXT));
    const a = agent();
    for (let i = 0; i < 3; i++) expect(await fetchMetricsText(p.url, 1000, a)).toBe(TEXT);
    expect(p.connections()).toBe(1);
  });

  it('a status other than 200 is an error naming it', async () => {
    const p = await pod((_req, res) => { res.statusCode = 404; res.end('not found'); });
    await expect(fetchMetricsText(p.url, 1000, agent())).rejects.toThrow('status 404');
  });

  it('a body over the cap is an error, by its content-length or as it streams', async () => {
    const declared = await pod((_req, res) => { res.setHeader('content-length', String(MAX_METRICS_BYTES + 1)); res.write('x'); });
    await expect(fetchMetricsText(declared.url, 2000, agent())).rejects.toThrow(/is over/);
    const streamed = await pod((_req, res) => {
      const chunk = Buffer.alloc(1024 * 1024, 120);
      for (let i = 0; i < 5; i++) res.write(chunk);
      res.end();
    });
    await expect(fetchMetricsText(streamed.url, 2000, agent())).rejects.toThrow(/body over/);
  });

  it('no whole answer within the timeout is an error', async () => {
    const p = await pod((_req, res) => { res.writeHead(200); res.write('# partial'); });
    await expect(fetchMetricsText(p.url, 200, agent())).rejects.toThrow('no answer within 200 ms');
  });

  it('an answer that came within the timeout while the event loop was busy past it is read, not taken for no answer', async () => {
    // The pod in a thread of its own answers while this event loop is held.
    const worker = new Worker(`
      const { createServer } = require('node:http');
      const { parentPort } = require('node:worker_threads');
      const s = createServer((req, res) => res.end(${JSON.stringify(TEXT)}));
      s.listen(0, '127.0.0.1', () => parentPort.postMessage(s.address().port));
    `, { eval: true });
    try {
      const port = await new Promise<number>((r) => worker.once('message', r));
      const url = `http://127.0.0.1:${port}/metrics`;
      const a = agent();
      expect(await fetchMetricsText(url, 100, a)).toBe(TEXT); // the connection, kept alive
      const scrape = fetchMetricsText(url, 100, a);
      // The request is written at once (on the kept connection); the event loop is then busy past
      // the timeout in this turn's check phase, and the next turn runs the due timer before it
      // reads the answer that came meanwhile.
      await busyAfterThisTurn(400);
      expect(await scrape).toBe(TEXT);
    } finally {
      await worker.terminate();
    }
  });

  it('a pod that is not listening is an error', async () => {
    const p = await pod((_req, res) => res.end(TEXT));
    await new Promise((r) => p.server.close(r));
    await expect(fetchMetricsText(p.url, 1000, agent())).rejects.toThrow(/ECONNREFUSED/);
  });

  it('a pod that closes the answer early is an error', async () => {
    const p = await pod((req, res) => { res.writeHead(200, { 'content-length': '100' }); res.write('# short'); setTimeout(() => req.socket.destroy(), 20); });
    await expect(fetchMetricsText(p.url, 1000, agent())).rejects.toThrow();
  });

  it('a kept-alive connection the pod drops just as a scrape is sent: sent once more on a new connection', async () => {
    // Each connection answers its first request and drops at its second, unanswered: what a pod
    // closing an idle connection at the moment a request arrives looks like to the client.
    let connections = 0;
    const tcp: TcpServer = createTcpServer((socket) => {
      connections++;
      let requests = 0;
      socket.on('data', (d) => {
        if (!d.toString('latin1').includes('\r\n\r\n')) return;
        if (++requests === 2) { socket.destroy(); return; }
        socket.write(`HTTP/1.1 200 OK\r\ncontent-length: ${TEXT.length}\r\nconnection: keep-alive\r\n\r\n${TEXT}`);
      });
    });
    await new Promise<void>((r) => tcp.listen(0, '127.0.0.1', r));
    const a = agent();
    try {
      const url = `http://127.0.0.1:${(tcp.address() as AddressInfo).port}/metrics`;
      expect(await fetchMetricsText(url, 1000, a)).toBe(TEXT);
      expect(await fetchMetricsText(url, 1000, a)).toBe(TEXT);
      expect(connections).toBe(2);
    } finally {
      a.destroy(); // its kept-alive connection would hold the server's close
      await new Promise((r) => tcp.close(r));
    }
  });

  it('a kept-alive connection the pod closed between scrapes: the next scrape still reads the text', async () => {
    const p = await pod((_req, res) => res.end(TEXT));
    p.server.keepAliveTimeout = 50; // the pod drops idle connections after 50 ms
    const a = agent();
    expect(await fetchMetricsText(p.url, 1000, a)).toBe(TEXT);
    await new Promise((r) => setTimeout(r, 150));
    expect(await fetchMetricsText(p.url, 1000, a)).toBe(TEXT);
    expect(p.connections()).toBe(2);
  });
});
