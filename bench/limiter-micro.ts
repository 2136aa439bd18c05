/**
 * Micro benchmark of a local-mode rate limit decision:
 *  1. the in-process CounterStore (what the cluster primary runs per decision);
 *  2. LocalLimitClient -> cluster IPC -> attachLocalLimitHost in a real node:cluster, with
 *     1 decision in flight (round-trip latency) and 100 in flight (cost per decision when batched);
 *  3. all workers at once with 100 in flight each (aggregate capacity of the primary);
 *  4. the same client when the primary grants leases (the router's default): decisions made in the
 *     worker from its lease, one worker and all workers at once.
 * Steps 2 and 3 run with leases off (RATE_LIMIT_LOCAL_LEASES=false), so every decision crosses IPC.
 *
 * Run: npm run build && node dist/bench/limiter-micro.js
 * Env: BENCH_WORKERS (workers for step 3, default: available parallelism, at least 2).
 */
import cluster, { type Worker } from 'node:cluster';
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { RateLimitSpec } from 'inference-router/config/resource-types';
import { CounterStore } from 'inference-router/ratelimit/local/counter-store';
import { LocalLimitClient } from 'inference-router/ratelimit/local/limit-client';
import { attachLocalLimitHost } from 'inference-router/ratelimit/local/limit-host';
import { takesNoArguments } from './cli-args.js';

// The workers, started with the same arguments, do not read them.
if (cluster.isPrimary) takesNoArguments('Usage: node dist/bench/limiter-micro.js   (no options; BENCH_WORKERS: workers for the all-workers step)');

const LIMIT: RateLimitSpec = { inputTokensPerUnit: Number.MAX_SAFE_INTEGER, outputTokensPerUnit: 1_000_000_000, unit: 'day', global: null, mode: 'enforce' };
const ROUTE = 'bench/route';

interface Measure {
  name: string;
  decisions: number;
  usPerDecision: number;
}

function inProcess(): Measure[] {
  const store = new CounterStore();
  const routes = Array.from({ length: 64 }, (_, i) => `bench/r${i}`);
  const n = 2_000_000;
  const out: Measure[] = [];
  for (const [name, pick] of [
    ['CounterStore.admit, one route', () => ROUTE],
    ['CounterStore.admit, 64 routes', (i: number) => routes[i & 63]],
  ] as const) {
    for (let i = 0; i < 200_000; i++) store.admit(pick(i), LIMIT, 4); // warm-up
    const t0 = performance.now();
    let allowed = 0;
    for (let i = 0; i < n; i++) if (store.admit(pick(i), LIMIT, 4).allowed) allowed++;
    const us = ((performance.now() - t0) * 1000) / n;
    if (allowed !== n) throw new Error(`expected every decision admitted, got ${allowed}/${n}`);
    out.push({ name, decisions: n, usPerDecision: us });
  }
  return out;
}

/** `total` decisions with `concurrency` in flight; µs per decision (wall time / decisions). */
async function overIpc(client: LocalLimitClient, concurrency: number, total: number): Promise<number> {
  let issued = 0;
  const lane = async (): Promise<void> => {
    while (issued < total) {
      issued++;
      const d = await client.admit(ROUTE, LIMIT, 4);
      if (!d.allowed) throw new Error('unexpected rejection');
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: concurrency }, lane));
  return ((performance.now() - t0) * 1000) / total;
}

type Task = { t: 'bench:run'; concurrency: number; total: number; warmup: number };

async function worker(): Promise<void> {
  const client = new LocalLimitClient({ timeoutMs: 5_000 });
  process.on('message', async (msg: Task | { t: string }) => {
    if (msg.t === 'bench:close') {
      await client.close();
      process.disconnect();
      return;
    }
    if (msg.t !== 'bench:run') return;
    const task = msg as Task;
    await overIpc(client, task.concurrency, task.warmup);
    const us = await overIpc(client, task.concurrency, task.total);
    process.send!({ t: 'bench:result', us });
  });
  process.send!({ t: 'bench:ready' });
}

function waitFor(w: Worker, t: string): Promise<Record<string, unknown>> {
  return new Promise((resolve) => {
    const on = (msg: { t?: string }): void => {
      if (msg?.t !== t) return;
      w.off('message', on);
      resolve(msg as Record<string, unknown>);
    };
    w.on('message', on);
  });
}

async function run(ws: Worker[], concurrency: number, total: number): Promise<number[]> {
  const results = ws.map((w) => waitFor(w, 'bench:result'));
  for (const w of ws) w.send({ t: 'bench:run', concurrency, total, warmup: Math.min(total, 20_000) } satisfies Task);
  return (await Promise.all(results)).map((r) => r.us as number);
}

async function primary(): Promise<void> {
  const results: Measure[] = inProcess();
  const store = new CounterStore();
  let detach = attachLocalLimitHost(cluster, store, { leaseDivisor: 0 });
  const count = Math.max(2, Number(process.env.BENCH_WORKERS ?? availableParallelism()));
  const ws = Array.from({ length: count }, () => cluster.fork());
  await Promise.all(ws.map((w) => waitFor(w, 'bench:ready')));

  const [seq] = await run(ws.slice(0, 1), 1, 20_000);
  results.push({ name: 'IPC client, 1 worker, 1 in flight', decisions: 20_000, usPerDecision: seq });
  const [par] = await run(ws.slice(0, 1), 100, 400_000);
  results.push({ name: 'IPC client, 1 worker, 100 in flight', decisions: 400_000, usPerDecision: par });
  const [par1k] = await run(ws.slice(0, 1), 1000, 400_000);
  results.push({ name: 'IPC client, 1 worker, 1000 in flight', decisions: 400_000, usPerDecision: par1k });
  const t0 = performance.now();
  const perWorker = 200_000;
  await run(ws, 100, perWorker);
  const aggregate = ((performance.now() - t0) * 1000) / (perWorker * count);
  results.push({ name: `IPC clients, ${count} workers x 100 in flight (aggregate)`, decisions: perWorker * count, usPerDecision: aggregate });

  detach();
  detach = attachLocalLimitHost(cluster, store, { leaseDivisor: 8 * count });
  const [leased] = await run(ws.slice(0, 1), 1, 1_000_000);
  results.push({ name: 'leases on: 1 worker, 1 in flight', decisions: 1_000_000, usPerDecision: leased });
  const t1 = performance.now();
  await run(ws, 100, 1_000_000);
  const leasedAll = ((performance.now() - t1) * 1000) / (1_000_000 * count);
  results.push({ name: `leases on: ${count} workers x 100 in flight (aggregate)`, decisions: 1_000_000 * count, usPerDecision: leasedAll });

  for (const w of ws) w.send({ t: 'bench:close' });
  detach();
  console.log(`limiter micro benchmark (node ${process.version}, ${availableParallelism()} CPUs)`);
  for (const r of results) {
    const perSec = Math.round(1e6 / r.usPerDecision).toLocaleString('en-US');
    console.log(`${r.name.padEnd(58)} ${r.usPerDecision.toFixed(3).padStart(8)} µs/decision  ${perSec.padStart(12)} decisions/s`);
  }
  console.log(JSON.stringify({ limiterMicro: results }));
}

if (cluster.isPrimary) await primary();
else await worker();
