/**
 * Reference: the proxy a team would otherwise write — node:http server under node:cluster
 * (default round-robin scheduling), undici Pool `request()` to the backend, body read whole,
 * answer piped back. No routing, limits or log.
 *
 *   node dist/bench/reference-node-proxy.js --port P --upstream http://127.0.0.1:U --workers N
 *
 * Prints "ready with N workers" once all listen.
 */
import cluster from 'node:cluster';
import http, { type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { Pool, type Dispatcher } from 'undici';
import { parseReferenceArgs, startReferencePrimary } from './reference-args.js';

const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'proxy-connection', 'upgrade', 'te', 'trailer', 'host']);

function strip(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const name in headers) if (!HOP.has(name)) out[name] = headers[name];
  return out;
}

function worker(port: number, upstream: string): void {
  const pool = new Pool(upstream, { connections: 64, pipelining: 1 });
  const server = http.createServer(async (req, res) => {
    try {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const up = await pool.request({
        path: req.url ?? '/',
        method: req.method as Dispatcher.HttpMethod,
        headers: strip(req.headers) as Record<string, string>,
        body: chunks.length === 0 ? null : Buffer.concat(chunks),
      });
      res.writeHead(up.statusCode, strip(up.headers));
      await pipeline(up.body, res);
    } catch (err) {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' }).end(`upstream error: ${(err as Error).message}`);
      else res.destroy();
    }
  });
  server.keepAliveTimeout = 65_000;
  server.listen(port, '127.0.0.1', () => process.send?.({ t: 'listening' }));
}

const args = parseReferenceArgs(process.argv.slice(2));
if (cluster.isPrimary) startReferencePrimary('reference node proxy', args.workers);
else worker(args.port, args.upstream);
