import cluster, { type Worker } from 'node:cluster';
import type { Endpoint, ModelRoute, ModelServer, ResourceSnapshot } from '../config/resource-types.js';
import { FileSource } from '../config/file-source.js';
import { CounterStore } from '../ratelimit/local/counter-store.js';
import { attachLocalLimitHost } from '../ratelimit/local/limit-host.js';
import { CrashGuard } from './crash-guard.js';
import { loadAuthConfigFile } from '../auth/auth-source.js';
import type { Settings } from '../settings.js';
import { attachMetricsPrimary } from '../observe/metrics-cluster.js';
import { isCoreMessage, type PrimaryToWorker, type WorkerToPrimary } from './messages.js';
import { PodMetricsScraper } from '../pick/pod-metrics-scraper.js';
import { attachPodLoadPrimary } from '../pick/pod-load-share.js';
import { systemClock } from '../clock.js';

function log(message: string): void {
  process.stderr.write(`[primary ${process.pid}] ${message}\n`);
}

type Servers = (ModelServer & { endpoints: Endpoint[] })[];

/**
 * The primary never serves traffic: it loads resources, forks the workers, hands them
 * snapshots, owns the instance-wide local rate-limit counters, restarts dead workers and
 * coordinates readiness and shutdown.
 */
export async function runPrimary(settings: Settings, workerArgs: string[]): Promise<void> {
  let snapshot: ResourceSnapshot | null = null;
  let version = 0;
  let draining = false;
  const listening = new Set<number>();
  /** Workers that compiled a snapshot and connected its limit stores. */
  const applied = new Set<number>();
  const guard = new CrashGuard();
  // Pod metrics are scraped here, once per instance, and shared with the workers.
  const scraper = new PodMetricsScraper({ intervalMs: settings.scheduler.podMetricsIntervalMs, clock: systemClock, log });

  const broadcast = (m: PrimaryToWorker): void => {
    for (const w of Object.values(cluster.workers ?? {})) if (w?.isConnected()) w.send(m);
  };
  const updateReady = (): void => {
    const ready = !draining && snapshot !== null && listening.size === settings.workers && applied.size === settings.workers;
    broadcast({ t: 'core:ready', ready });
  };
  const publish = (routes: ModelRoute[], servers: Servers): void => {
    snapshot = { version: ++version, routes, servers };
    scraper.setTargets(servers);
    broadcast({ t: 'core:snapshot', snapshot });
    updateReady();
  };

  // Resources first: an invalid file stops the router before any worker starts.
  let stopSource: () => Promise<void> | void;
  if (settings.source === 'file') {
    const source = new FileSource({
      file: settings.resources!,
      apiGroup: settings.apiGroup,
      maxBytes: settings.resourcesMaxBytes,
      log,
      apply: (r) => publish(r.routes, r.servers.map((s) => ({ ...s, endpoints: s.endpoints ?? [] }))),
    });
    source.start();
    stopSource = () => source.stop();
  } else {
    const { KubernetesSource } = await import('../config/kubernetes-source.js');
    const source = new KubernetesSource({ apiGroup: settings.apiGroup, namespace: settings.namespace, log });
    source.onSnapshot((s) => publish(s.routes, s.servers));
    stopSource = () => source.stop();
    void source.start().then(() => log('kubernetes: first full sync done'), (err: Error) => log(`kubernetes: ${err.message}`));
  }

  // An invalid auth file stops the router before any worker starts, like an invalid resources file.
  if (settings.authConfig !== null) loadAuthConfigFile(settings.authConfig);

  const store = new CounterStore();
  // Each worker's lease holds 1/(8 × workers) of what is free: together at most 1/8 of it.
  attachLocalLimitHost(cluster, store, { leaseDivisor: settings.localLeases ? 8 * settings.workers : 0 });
  attachMetricsPrimary(cluster);
  const stopLoadShare = attachPodLoadPrimary(cluster, scraper, settings.scheduler.podMetricsIntervalMs, (m) => {
    for (const w of Object.values(cluster.workers ?? {})) if (w?.isConnected()) w.send(m);
  });

  cluster.setupPrimary({ args: workerArgs, silent: false });
  const fork = (): Worker => {
    const w = cluster.fork({ ROUTER_WORKER: '1' });
    w.on('message', (m: unknown) => {
      if (!isCoreMessage(m)) return;
      const msg = m as WorkerToPrimary;
      if (msg.t === 'core:ping') {
        w.send({ t: 'core:pong' } satisfies PrimaryToWorker);
      } else if (msg.t === 'core:listening') {
        listening.add(w.id);
        if (snapshot !== null) w.send({ t: 'core:snapshot', snapshot } satisfies PrimaryToWorker);
        updateReady();
      } else if (msg.t === 'core:applied') {
        applied.add(w.id);
        updateReady();
      } else if (msg.t === 'core:fatal') {
        log(`worker ${w.process.pid} failed: ${msg.message}`);
      }
    });
    // A worker that starts while a snapshot exists gets it as soon as it listens (above).
    return w;
  };

  cluster.on('exit', (w, code, signal) => {
    const wasListening = listening.delete(w.id);
    applied.delete(w.id);
    if (draining) return;
    log(`worker ${w.process.pid} exited (${signal ?? `code ${code}`})${wasListening ? '' : ' before listening'}`);
    updateReady();
    if (!guard.allowRestart()) {
      log('workers are crashing in a loop (more than 5 deaths in 30s); stopping the router');
      void shutdown(1);
      return;
    }
    fork();
  });

  const shutdown = async (code: number): Promise<void> => {
    if (draining) return;
    draining = true;
    log(code === 0 ? 'draining: readiness off, stopping listeners, finishing in-flight requests' : 'stopping');
    broadcast({ t: 'core:ready', ready: false });
    broadcast({ t: 'core:drain' });
    await stopSource();
    stopLoadShare();
    const deadline = setTimeout(() => {
      log('drain timeout passed; killing remaining workers');
      for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGKILL');
    }, settings.drainTimeoutMs + 5_000);
    deadline.unref();
    await waitForWorkersToExit();
    clearTimeout(deadline);
    process.exit(code);
  };

  process.on('SIGTERM', () => void shutdown(0));
  process.on('SIGINT', () => void shutdown(0));
  process.on('SIGHUP', () => broadcast({ t: 'core:reopen-log' }));

  for (let i = 0; i < settings.workers; i++) fork();
  log(`started ${settings.workers} workers on ${settings.host}:${settings.port}`);
}

function waitForWorkersToExit(): Promise<void> {
  return new Promise((resolve) => {
    const check = (): void => {
      if (Object.values(cluster.workers ?? {}).every((w) => w === undefined || w.isDead())) resolve();
      else setTimeout(check, 20);
    };
    check();
  });
}
