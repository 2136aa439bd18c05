/**
 * Micro benchmark of the primary's work per scrape (metrics-cluster.ts): workers' answers with a
 * real RouterMetrics + SchedulerMetrics registry each (`routes` routes in use, mixed statuses,
 * every backend pod counted by the five per-pod counters), plus the last answers of workers that
 * exited in a rollout. Reported: CPU of the primary from the scrape request to its text, and of
 * the sum alone on the same lists (the part that is not the epochs' sum): the primary's own
 * (aggregate-in-turns.ts, histograms as their parts) and prom-client's aggregate() (histograms
 * made into its JSON first, as the primary did before), with the same text.
 *
 * Run: npm run build && node dist/bench/metrics-primary-scrape.js [pods] [workers] [routes]
 */
import { EventEmitter } from 'node:events';
import { AggregatorRegistry } from 'prom-client';
import { aggregateInTurns } from 'inference-router/observe/aggregate-in-turns';
import { RequestContext } from 'inference-router/http/request-context';
import { RouterMetrics } from 'inference-router/observe/metrics';
import { SchedulerMetrics } from 'inference-router/observe/scheduler-metrics';
import { attachMetricsPrimary, MSG_COLLECT, MSG_DATA, MSG_GET, MSG_HELLO, MSG_TEXT, registryAnswer, type SentMetric } from 'inference-router/observe/metrics-cluster';
import { histogramJson, isHistogramParts, type MetricJson } from 'inference-router/observe/metrics-series';
import { positiveNumber, readCommandLine } from './cli-args.js';

const USAGE = 'Usage: node dist/bench/metrics-primary-scrape.js [pods (500)] [workers (4)] [routes (64)]';
const [PODS, WORKERS, ROUTES] = readCommandLine({ usage: USAGE, positionals: [0, 3] }, (line) => [
  line.positionals[0] === undefined ? 500 : positiveNumber('pods', line.positionals[0]),
  line.positionals[1] === undefined ? 4 : positiveNumber('workers', line.positionals[1]),
  line.positionals[2] === undefined ? 64 : positiveNumber('routes', line.positionals[2]),
]);
/** Rounds of each measure: fewer with many routes in use (a round takes seconds). */
const ROUNDS = ROUTES > 1000 ? 5 : 40;

/** One worker's registry answer: ROUTES routes' request series and histograms, `pods` pods' counters and gauges. */
async function workerAnswer(pods: readonly string[], seed: number): Promise<SentMetric[]> {
  const m = new RouterMetrics({ defaultMetrics: false });
  const s = new SchedulerMetrics(m.registry, () => pods.filter((_, i) => i % 50 === seed), () => pods.map((p): [string, number] => [p, 1]), () => 1000, () => pods);
  const statuses = [200, 200, 200, 429, 502];
  for (let i = 0; i < Math.max(4096, ROUTES * 5); i++) {
    const c = new RequestContext('POST', '/v1/completions', 'HTTP/1.1', 'id', Date.now(), 1000);
    c.modelName = `model-${i % ROUTES}`;
    c.modelRoute = `default/route-${i % ROUTES}`;
    c.statusCode = statuses[i % 5];
    if (c.statusCode !== 200) c.fail(c.statusCode === 429 ? 'rate_limit' : 'upstream_error', 'x', c.statusCode);
    c.inputTokens = 100;
    c.outputTokens = 200;
    c.tUpstreamStart = 1001;
    c.tUpstreamEnd = 1001 + (i % 300);
    c.tEnd = c.tUpstreamEnd + 1;
    m.observeRequest(c, 40);
  }
  for (const [i, pod] of pods.entries()) {
    for (let k = 0; k <= (i + seed) % 3; k++) s.connectFailed(pod);
    s.timedOut(pod);
    s.reset(pod);
    s.serverError(pod);
    if (i % 50 === seed) s.ejected(pod);
  }
  return registryAnswer(m.registry); // as a worker sends it: histogram families as their parts
}

class BenchWorker {
  sent: any[] = [];
  isConnected(): boolean {
    return true;
  }
  send(msg: unknown, _h: unknown, cb?: (err: Error | null) => void): boolean {
    this.sent.push(msg);
    cb?.(null);
    return true;
  }
}

function sinceMs(t0: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(t0);
  return (d.user + d.system) / 1000;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1];
}

async function main(): Promise<void> {
  // Pods of the configuration now, and of the one before the rollout (still in the exited workers' answers).
  const pods = Array.from({ length: PODS }, (_, i) => `vllm-${i.toString(36)}-new`);
  const oldPods = Array.from({ length: PODS }, (_, i) => `vllm-${i.toString(36)}-old`);
  const epochs = Object.fromEntries(pods.map((p) => [p, 7]));
  const oldEpochs = Object.fromEntries(oldPods.map((p) => [p, 3]));
  const configured = new Set(pods);
  const answers = await Promise.all(Array.from({ length: WORKERS }, (_, i) => workerAnswer(pods, i)));
  const oldAnswers = await Promise.all(Array.from({ length: WORKERS }, (_, i) => workerAnswer(pods.slice(0, PODS >> 1), i)));
  const lists: MetricJson[][] = answers.map((a) => a.map((m) => (isHistogramParts(m) ? histogramJson(m) : m)));
  const series = lists[0].reduce((n, f) => n + f.values.length, 0);
  console.log(`node ${process.version}: ${ROUTES} routes in use, ${PODS} backend pods, ${WORKERS} workers, ${series} lines per answer`);

  const ours: number[] = [];
  const theirs: number[] = [];
  let same = true;
  for (let r = 0; r < ROUNDS; r++) {
    let t0 = process.cpuUsage();
    const text = await aggregateInTurns(answers);
    ours.push(sinceMs(t0));
    t0 = process.cpuUsage();
    same &&= (await AggregatorRegistry.aggregate(lists as never).metrics()) === text;
    theirs.push(sinceMs(t0));
  }
  console.log(`${'the primary\'s sum of the live answers alone (aggregateInTurns)'.padEnd(66)} ${median(ours).toFixed(2).padStart(7)} ms CPU`);
  console.log(`${`prom-client aggregate().metrics() of them (${same ? 'the same text' : 'ANOTHER TEXT'})`.padEnd(66)} ${median(theirs).toFixed(2).padStart(7)} ms CPU`);
  if (!same) process.exitCode = 1;
  for (const exited of [0, WORKERS]) {
    for (const late of [false, true]) {
      const cluster = new EventEmitter();
      const detach = attachMetricsPrimary(cluster as never, { timeoutMs: 1, backendPods: () => configured });
      const emit = (w: BenchWorker, msg: unknown): void => void cluster.emit('message', w, msg);
      // Workers that exited after answering with their epochs (a rollout ago: half of the pods are still configured).
      const exitedWorkers: BenchWorker[] = [];
      for (let i = 0; i < exited; i++) {
        const w = new BenchWorker();
        emit(w, { t: MSG_HELLO });
        emit(w, { t: MSG_GET, id: 1 });
        const id = w.sent.find((m) => m.t === MSG_COLLECT).id;
        emit(w, { t: MSG_DATA, id, metrics: oldAnswers[i], podEpochs: { ...oldEpochs, ...Object.fromEntries(pods.slice(0, PODS >> 1).map((p) => [p, 7])) } });
        cluster.emit('exit', w);
        exitedWorkers.push(w);
      }
      // Their scrapes summed (or refused: one sum at a time, one waiting) before the rounds.
      while (!exitedWorkers.every((w) => w.sent.some((m) => m.t === MSG_TEXT))) await new Promise((res) => setImmediate(res));
      const workers = Array.from({ length: WORKERS }, () => new BenchWorker());
      for (const w of workers) emit(w, { t: MSG_HELLO });
      let id = 0;
      const total: number[] = [];
      // Round 0 answered by all: their last answers stand in when they are late.
      for (let r = 0; r <= ROUNDS; r++) {
        const req = workers[0];
        req.sent = [];
        const mine = ++id;
        const t0 = process.cpuUsage();
        emit(req, { t: MSG_GET, id: mine });
        const collect = req.sent.find((m) => m.t === MSG_COLLECT).id;
        if (!late || r === 0) for (const [i, w] of workers.entries()) emit(w, { t: MSG_DATA, id: collect, metrics: answers[i], podEpochs: epochs });
        // The text is written once aggregateInTurns() resolves (late: after the 1 ms timeout).
        while (!req.sent.some((m) => m.t === MSG_TEXT)) await new Promise((res) => setImmediate(res));
        if (r > 0) total.push(sinceMs(t0));
        const answer = req.sent.find((m) => m.t === MSG_TEXT);
        if (typeof answer.text !== 'string') throw new Error(`round ${r}: the scrape was answered with an error: ${answer.error}`);
      }
      const what = `${exited} exited workers kept, ${late ? 'every worker late' : 'every worker answers'}`;
      console.log(`${`primary, ${what}: request to text`.padEnd(66)} ${median(total).toFixed(2).padStart(7)} ms CPU (median of ${ROUNDS})`);
      detach();
    }
  }
}

void main();
