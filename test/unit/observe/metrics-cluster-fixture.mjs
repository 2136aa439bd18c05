// A tiny node:cluster router stand-in over the compiled dist modules (npx tsc -p tsconfig.json):
// the primary aggregates metrics and hosts the local rate limiter (so `rl:` IPC traffic flows
// next to `metrics:` traffic, and prom-client's own AggregatorRegistry listener is attached too);
// each worker observes a known set of requests and serves GET /metrics on the shared port.
// Usage: node metrics-cluster-fixture.mjs <port>
import cluster from 'node:cluster';
import { createRequire } from 'node:module';

const dist = new URL('../../../dist/', import.meta.url);
const { RouterMetrics } = await import(new URL('observe/metrics.js', dist).href);
const { attachMetricsPrimary } = await import(new URL('observe/metrics-cluster.js', dist).href);
const { metricsHandler } = await import(new URL('observe/metrics-answer.js', dist).href);
const { WorkerMetricsLink } = await import(new URL('observe/metrics-cluster.js', dist).href);
const { RequestContext } = await import(new URL('http/request-context.js', dist).href);
const port = Number(process.argv[2]);

/** What each worker observes: [model, route, status, error type, input tokens]. */
const TRAFFIC = {
  1: [
    ...Array(3).fill(['sf-model', 'default/sf-route', 200, null, 10]),
    ['sf-model', 'default/sf-route', 429, 'rate_limit', 10],
  ],
  2: [
    ...Array(5).fill(['sf-model', 'default/sf-route', 200, null, 10]),
    ...Array(2).fill(['nope', '', 404, 'model_not_found', 0]),
  ],
  // Forked when a worker exits cleanly (the replacement of one that drained).
  3: [],
};

/** What a worker told to drain (SIGUSR1) observes last, after its last scrape, before it hands its final counts and exits. */
const LAST_TRAFFIC = Array(3).fill(['sf-model', 'default/sf-route', 200, null, 10]);

if (cluster.isPrimary) {
  const { CounterStore } = await import(new URL('ratelimit/local/counter-store.js', dist).href);
  const { attachLocalLimitHost } = await import(new URL('ratelimit/local/limit-host.js', dist).href);
  const { AggregatorRegistry } = createRequire(import.meta.url)('prom-client');
  new AggregatorRegistry(); // its cluster listener must ignore our messages (and we its)
  // Texts in parts of about 512 characters: every scrape's text comes to the worker in parts (a real one only past 1 M).
  attachMetricsPrimary(cluster, { timeoutMs: 3000, textPartChars: 512 });
  attachLocalLimitHost(cluster, new CounterStore(), { leaseDivisor: 0 }); // no leases: every decision is IPC traffic
  let ready = 0;
  // SIGHUP: of the next scrape's text, the primary sends the first part only (as if it died mid-way).
  let cutNext = false;
  process.on('SIGHUP', () => {
    cutNext = true;
    process.stdout.write('CUT\n');
  });
  // SIGUSR2: the next scrape's gathering holds this event loop past its timeout (3 s) right after
  // it asked the workers, as a long task or a collection would; the workers answer meanwhile.
  let holdNext = false;
  process.on('SIGUSR2', () => {
    holdNext = true;
    process.stdout.write('HOLD\n');
  });
  cluster.on('message', (w, m) => {
    if (m?.t === 'fixture:ready' && ++ready === 2) process.stdout.write('READY\n');
    if (m?.t === 'metrics:get' && holdNext) {
      holdNext = false;
      setImmediate(() => {
        const until = Date.now() + 3500;
        while (Date.now() < until) { /* busy */ }
      });
    }
  });
  const fork = (i) => {
    const w = cluster.fork({ WORKER_INDEX: String(i) });
    const send = w.send.bind(w);
    let cutting = false;
    w.send = (m, ...rest) => {
      if (m?.t === 'metrics:text' && m.more === true && cutNext) {
        cutNext = false;
        cutting = true;
        return send(m, ...rest);
      }
      if (cutting && m?.t === 'metrics:text') {
        if (m.more !== true) cutting = false;
        return true; // dropped
      }
      return send(m, ...rest);
    };
    w.on('online', () => process.stdout.write(`WORKER ${i} ${w.process.pid}\n`));
    // A worker that drained is replaced, as the router's primary replaces one retired alone.
    w.on('exit', (code) => {
      if (code === 0) fork(3);
    });
  };
  fork(1);
  fork(2);
  process.on('SIGTERM', () => {
    for (const w of Object.values(cluster.workers)) w?.process.kill('SIGKILL');
    process.exit(0);
  });
} else {
  const index = Number(process.env.WORKER_INDEX);
  // The native build this runtime loads, as the router picks it (the 20.30 package alone has no Node 22/24 binary).
  const { loadUws } = await import(new URL('http/uws.js', dist).href);
  const uws = loadUws();
  const { LocalLimitClient } = await import(new URL('ratelimit/local/limit-client.js', dist).href);
  const metrics = new RouterMetrics({ defaultMetrics: false });
  metrics.bindSources({ upstreamPods: () => [{ name: 'pod-a', inflight: index, connections: index, queued: 0 }] });
  const observe = (traffic) => {
    for (const [model, route, status, error, input] of traffic) {
      const ctx = new RequestContext('POST', '/v1/completions', 'HTTP/1.1', 'r', Date.now(), 1000);
      ctx.modelName = model;
      ctx.modelRoute = route;
      ctx.statusCode = status;
      if (error !== null) ctx.fail(error, 'x', status);
      ctx.inputTokens = input;
      ctx.tEnd = 1100;
      metrics.observeRequest(ctx, null);
    }
  };
  observe(TRAFFIC[index]);
  // Tenants, on a route of their own: worker 1 sees a tenant named "other" (7 input tokens) and
  // 149 more, worker 2 sees 60 others (1 token each); each worker has its own series for its first 100.
  const tenants = index === 1 ? ['other', ...Array.from({ length: 149 }, (_, i) => `t1-${i}`)] : Array.from({ length: 60 }, (_, i) => `t2-${i}`);
  for (const tenant of tenants) {
    const ctx = new RequestContext('POST', '/v1/completions', 'HTTP/1.1', 'r', Date.now(), 1000);
    ctx.modelName = 'sf-model';
    ctx.modelRoute = 'default/tenant-route';
    ctx.statusCode = 200;
    ctx.tenant = tenant;
    ctx.inputTokens = tenant === 'other' ? 7 : 1;
    ctx.tEnd = 1100;
    metrics.observeRequest(ctx, null);
  }
  // Rate limit IPC traffic on the same channel during scrapes.
  const limiter = new LocalLimitClient();
  const spec = { inputTokensPerUnit: 1_000_000_000, outputTokensPerUnit: null, unit: 'minute', global: null, mode: 'enforce' };
  setInterval(() => void Promise.resolve(limiter.admit(`noise/${index}`, spec, 1)).catch(() => {}), 2).unref();
  const link = new WorkerMetricsLink(metrics);
  const serve = metricsHandler(metrics, link);
  // SIGUSR1: drain as the router's worker does: its listener closed, its last requests counted,
  // its final counts handed to the primary, exit 0.
  let listening = null;
  process.on('SIGUSR1', async () => {
    uws.us_listen_socket_close(listening);
    observe(LAST_TRAFFIC);
    const taken = await link.final(2000);
    process.stdout.write(`FINAL ${index} ${taken}\n`);
    process.exit(0);
  });
  uws.App().get('/metrics', (res) => serve(res, false, () => false)).head('/metrics', (res) => serve(res, true, () => false)).listen('127.0.0.1', port, (sock) => {
    listening = sock;
    if (!sock) {
      process.stderr.write(`worker ${index}: cannot listen on ${port}\n`);
      process.exit(1);
    }
    process.send({ t: 'fixture:ready' });
  });
}
