/**
 * A bare uWS front proxying every request to one upstream through one of the candidate
 * clients of bench/upstream-candidates.ts (no parsing, routing, limits or log):
 *
 *   node dist/bench/upstream-proxy.js --client pool|client|http1 --port P --upstream http://HOST:PORT --workers N
 *     [--burn-us U] [--garbage-objects K]
 *
 * Prints "<name> ready with N workers" once all workers listen. For calibration only (what part of
 * the router's latency its CPU and its allocation explain), per request before forwarding it:
 * `--burn-us U` spins until the process has used U µs more CPU; `--garbage-objects K` allocates
 * K small objects that die young. Both 0 by default.
 */
import cluster from 'node:cluster';
import { loadUws } from 'inference-router/http/uws';
import { CANDIDATES, makeCandidate, type CandidateKind } from './upstream-candidates.js';
import { parseReferenceArgs, startReferencePrimary } from './reference-args.js';

// The native build the router itself loads (never the package's silent JavaScript fallback).
const uWS = loadUws();

const SKIP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'host', 'proxy-connection', 'upgrade', 'te', 'trailer']);

/** Per request: U µs of CPU spun and K short-lived objects allocated (calibration; 0 and 0: none). */
interface Ballast { readonly burnUs: number; readonly garbageObjects: number }

/** Kept so the allocation is not optimised away; replaced by the next request's. */
let lastGarbage: unknown = null;

function carry(b: Ballast): void {
  if (b.burnUs > 0) {
    // Until the process has run U µs more (not U µs of wall time: a spin preempted halfway must
    // still cost its CPU, as the router's own work would).
    const start = process.cpuUsage();
    for (;;) {
      const used = process.cpuUsage(start);
      if (used.user + used.system >= b.burnUs) break;
    }
  }
  if (b.garbageObjects > 0) {
    const objects: { i: number; next: unknown }[] = [];
    for (let i = 0; i < b.garbageObjects; i++) objects.push({ i, next: null });
    lastGarbage = objects;
  }
}

function worker(kind: CandidateKind, port: number, upstream: string, ballast: Ballast): void {
  const candidate = makeCandidate(kind, upstream);
  const carrying = ballast.burnUs > 0 || ballast.garbageObjects > 0;
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
      if (carrying) carry(ballast);
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
const ballast: Ballast = { burnUs: takeCount(argv, '--burn-us'), garbageObjects: takeCount(argv, '--garbage-objects') };
const args = parseReferenceArgs(argv);
if (cluster.isPrimary) startReferencePrimary(`upstream proxy (${kind})`, args.workers);
else worker(kind, args.port, args.upstream, ballast);

/** Removes `name N` from argv and gives N (an integer ≥ 0), or 0 when absent. */
function takeCount(argv: string[], name: string): number {
  const i = argv.indexOf(name);
  if (i === -1) return 0;
  const n = Number(argv[i + 1]);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name}: expected an integer of 0 or more, got ${JSON.stringify(argv[i + 1])}`);
  argv.splice(i, 2);
  return n;
}
