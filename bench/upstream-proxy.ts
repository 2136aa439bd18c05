/**
 * A bare uWS front proxying every request to one upstream through one of the candidate
 * clients of bench/upstream-candidates.ts (no parsing, routing, limits or log):
 *
 *   node dist/bench/upstream-proxy.js --client pool|client|http1 --port P --upstream http://HOST:PORT --workers N
 *
 * Prints "<name> ready with N workers" once all workers listen.
 */
import cluster from 'node:cluster';
import { loadUws } from 'inference-router/http/uws';
import { CANDIDATES, makeCandidate, type CandidateKind } from './upstream-candidates.js';
import { parseReferenceArgs, startReferencePrimary } from './reference-args.js';

// The native build the router itself loads (never the package's silent JavaScript fallback).
const uWS = loadUws(false);

const SKIP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'host', 'proxy-connection', 'upgrade', 'te', 'trailer']);

function worker(kind: CandidateKind, port: number, upstream: string): void {
  const candidate = makeCandidate(kind, upstream);
  uWS.App().any('/*', (res, req) => {
    const query = req.getQuery();
    const path = query ? `${req.getUrl()}?${query}` : req.getUrl();
    const headers: string[] = [];
    req.forEach((k, v) => { if (!SKIP.has(k)) headers.push(k, v); });
    const parts: Buffer[] = [];
    let call: { abort(): void } | null = null;
    let aborted = false;
    res.onAborted(() => {
      aborted = true;
      call?.abort();
    });
    res.onData((ab, last) => {
      parts.push(Buffer.from(ab.slice(0)));
      if (!last || aborted) return;
      call = candidate.send(res, path, headers, parts.length === 1 ? parts[0] : Buffer.concat(parts));
    });
  }).listen('127.0.0.1', port, (socket) => {
    if (socket === false) {
      process.stderr.write(`upstream proxy: cannot listen on ${port}\n`);
      process.exit(1);
    }
    process.send?.({ t: 'listening' });
  });
}

const argv = process.argv.slice(2);
const at = argv.indexOf('--client');
const kind = argv[at + 1] as CandidateKind;
if (at === -1 || !CANDIDATES.includes(kind)) throw new Error(`--client: one of ${CANDIDATES.join(', ')}`);
argv.splice(at, 2);
const args = parseReferenceArgs(argv);
if (cluster.isPrimary) startReferencePrimary(`upstream proxy (${kind})`, args.workers);
else worker(kind, args.port, args.upstream);
