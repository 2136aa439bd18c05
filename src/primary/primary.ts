import cluster, { type Worker } from 'node:cluster';
import { buildInfo } from '../build-info.js';
import type { Endpoint, ModelRoute, ModelServer, ResourceSnapshot } from '../config/resource-types.js';
import { FileSource } from '../config/file-source.js';
import { serversOfRoutes } from '../config/targeted-servers.js';
import { CounterStore } from '../ratelimit/local/counter-store.js';
import { attachLocalLimitHost } from '../ratelimit/local/limit-host.js';
import { dropMessagesToDeadWorker } from './worker-channel.js';
import { CrashGuard } from './crash-guard.js';
import type { Settings } from '../settings.js';
import { attachMetricsPrimary } from '../observe/metrics-cluster.js';
import { kubernetesWatchSeries } from '../observe/kubernetes-watch-series.js';
import type { MetricJson } from '../observe/metrics-series.js';
import { nextPodEpochs, type PodEpochs } from '../observe/backend-pod-epochs.js';
import { isCoreMessage, type PrimaryToWorker, type WorkerToPrimary } from './messages.js';
import { OpsLog } from '../observe/ops-log.js';
import { stopWhileStarting } from './stop-while-starting.js';
import { checkAccessLogOutput } from '../observe/access-log-sink.js';
import { VERSION } from '../config/version.js';
import { describeLimitStores, describeResources } from './startup-lines.js';
import { drainAgainLine, WORKER_KILL_GRACE_MS } from './drain-again.js';
import { PodMetricsScraper } from '../pick/pod-metrics-scraper.js';
import { attachPodLoadPrimary } from '../pick/pod-load-share.js';
import { PodHealthHub } from '../pick/pod-health-hub.js';
import { PrefixHub } from '../pick/prefix-hub.js';
import { systemClock } from '../clock.js';
import { o200kRanksFile } from '../tokens/o200k-ranks.js';
import { workerExecArgv } from './worker-exec-argv.js';
import { claimPort } from './port-claim.js';
import { chooseListenHost } from './listen-host.js';
import { exitOnFailure } from '../process-failure.js';
import { warningsToOpsLog } from '../process-warnings.js';
import { watchTlsFiles } from './tls-file-watch.js';
import { checkServable } from './tls-pair-servable.js';
import { TlsServedFiles } from './tls-served-files.js';
import { tlsCertificateSeries } from '../observe/tls-certificate-series.js';
import { performance } from 'node:perf_hooks';
import { RollingReplacement } from './rolling-replacement.js';
import { WorkerWatchdog } from './worker-watchdog.js';
import { openFileLimit } from '../open-file-limit.js';
import { nodeTimers } from '../timers.js';

/** An open-file limit below this is warned of at start: a worker alone holds about 90 once started. */
const LOW_FILE_LIMIT = 1024;

/** How often the watchdog looks at the workers: their core:alive period (worker.ts). */
const WATCHDOG_EVERY_MS = 1000;

type Servers = (ModelServer & { endpoints: Endpoint[] })[];

/**
 * The primary never serves traffic: it loads resources, forks the workers, hands them
 * snapshots, owns the instance-wide local rate-limit counters, restarts dead workers and
 * coordinates readiness and shutdown.
 */
export async function runPrimary(settings: Settings, workerArgs: string[]): Promise<void> {
  const ops = new OpsLog(settings.logFormat, 'primary');
  // A failure here is logged as a line of this log and ends the instance (exit 1): each worker,
  // seeing its channel to the primary gone, writes the records it holds and exits.
  exitOnFailure({ ops });
  warningsToOpsLog(ops);
  const source = (settings.source === 'file' ? `file ${settings.resources}` : `kubernetes ${settings.namespace === null ? 'all namespaces' : `namespace ${settings.namespace}`}`)
    + (settings.gateway === null ? '' : `, ModelRoutes of Gateway ${settings.gateway}`);
  ops.info('start', `inference-router ${VERSION} starting: ${settings.workers} workers, listen ${settings.host}:${settings.port}, ` +
    `Node ${buildInfo.node} with uWebSockets.js build ${buildInfo.uws}, resources from ${source}, auth ${settings.authConfig === null ? 'off' : `on (${settings.authConfig})`}, ` +
    `tracing ${settings.tracing === null ? 'off' : `on (${traceTarget(settings.tracing.endpoint)})`}`, {
    version: VERSION, node: buildInfo.node, uws: buildInfo.uws, workers: settings.workers, host: settings.host, port: settings.port,
    source: settings.source, resources: settings.resources ?? settings.namespace, gateway: settings.gateway, auth: settings.authConfig !== null,
    tracing: settings.tracing !== null,
  });
  // Until the drain's handlers are in place (below), a stop signal ends the start at once.
  const startDone = stopWhileStarting(ops);
  for (const w of settings.warnings) ops.warn('start', w.message, { variable: w.variable });
  if (settings.maxHeaderBytesSet && buildInfo.uws === 'uws-20.30') {
    ops.warn('start', `ROUTER_MAX_HEADER_BYTES=${settings.maxHeaderBytes} is not applied: the uWS 20.30 build (Node 20) has its own limits: a request head over 4 KiB is read only when it arrives in one read (about 74 KB at most), and closed without an answer when it comes in pieces; Node 22 or 24 load the 20.57 build, which applies it however the head arrives`);
  }
  const fileLimit = openFileLimit();
  if (fileLimit !== null && fileLimit < LOW_FILE_LIMIT) {
    ops.warn('start', `the open-file limit is ${fileLimit} (ulimit -n, systemd LimitNOFILE): a worker holds about 90 descriptors of its own once started, ` +
      'then one per client connection and per connection to a pod; a worker with none left stops accepting (docs/deploy.md#file-descriptors), ' +
      'and one that cannot start at all fails with EMFILE. Raise it (65536 is usual)', { limit: fileLimit });
  }
  // An access log that cannot be written stops the router before any worker starts (exit 2).
  if (settings.accessLog.enabled) checkAccessLogOutput(settings.accessLog.output);

  /** The address the workers listen on: settings.host, unless chooseListenHost() takes another (below). */
  let host = settings.host;
  let snapshot: ResourceSnapshot | null = null;
  /** Names of the backend pods of `snapshot` (metrics of others are dropped: metrics-cluster.ts). */
  let backendPods: Set<string> | null = null;
  /** By backend pod of `snapshot`, the version it entered the configuration (a pod removed and re-added gets a new one). */
  let podEpochs: PodEpochs | null = null;
  let version = 0;
  let draining = false;
  /** performance.now() when the drain began (0: it did not). */
  let drainStartedAt = 0;
  /** The drain's deadline passed: the workers still running were killed. */
  let pastDeadline = false;
  const listening = new Set<number>();
  /** Workers that compiled a snapshot and connected its limit stores. */
  const applied = new Set<number>();
  const guard = new CrashGuard();
  // Pod metrics are scraped here, once per instance, and shared with the workers.
  const scraper = new PodMetricsScraper({ intervalMs: settings.scheduler.podMetricsIntervalMs, clock: systemClock, log: (level, m) => ops[level]('pod-metrics', m) });

  const broadcast = (m: PrimaryToWorker): void => {
    for (const w of Object.values(cluster.workers ?? {})) if (w?.isConnected()) w.send(m);
  };
  /** The configuration now (if any) to one worker that listens. */
  const sendSnapshot = (w: Worker): void => {
    if (snapshot !== null && podEpochs !== null) w.send({ t: 'core:snapshot', snapshot, routesVersion, podEpochs } satisfies PrimaryToWorker);
  };
  let wasReady = false;
  const updateReady = (): void => {
    // At least: a certificate rotation starts a worker before it retires the one it replaces.
    const ready = !draining && snapshot !== null && listening.size >= settings.workers && applied.size >= settings.workers;
    if (ready !== wasReady) {
      wasReady = ready;
      if (ready) ops.info('ready', `${settings.workers} workers listening on ${host}:${settings.port}${settings.tls === null ? '' : ' (HTTPS)'}, snapshot ${version} applied; /readyz answers 200`);
      else if (!draining) ops.warn('ready', '/readyz answers 503: waiting for workers to listen and apply the snapshot');
    }
    broadcast({ t: 'core:ready', ready });
  };
  let stores = '';
  /** What the snapshot published last holds (its routes and servers as JSON, and the servers left out). */
  let publishedJson = '';
  /** Its routes alone, as JSON, and the version of the snapshot that brought them. */
  let publishedRoutesJson = '';
  let routesVersion = 0;
  const publish = (routes: ModelRoute[], allServers: Servers): void => {
    // The ModelServers no route targets are left out: their pods are neither scraped (below) nor
    // given to the workers, which would keep a pool and metric series for each (targeted-servers.ts).
    const { targeted: servers, untargeted } = serversOfRoutes(routes, allServers);
    // A change only in what is left out (a pod of a ModelServer no route targets came, went or
    // changed), or none (a comment, the same file written again), changes nothing the workers
    // use: the snapshot they have is kept.
    const routesJson = JSON.stringify(routes);
    const json = `${routesJson}\n${JSON.stringify([servers, untargeted])}`;
    if (snapshot !== null && json === publishedJson) {
      ops.info('reload', `resources ${settings.source === 'file' ? `reloaded from ${settings.resources}` : 'changed'}: nothing the routes use changed (a change only in ModelServers no route targets, or none); snapshot ${snapshot.version} kept`, { applied: true, unchanged: true, snapshot: snapshot.version });
      return;
    }
    publishedJson = json;
    // The routes as they were (a change of ModelServers only: pods moved in a rollout): the workers
    // are sent the servers alone and keep every route as compiled (only the servers that changed
    // are compiled again); the served models keep their `created`.
    const serversOnly = snapshot !== null && routesJson === publishedRoutesJson;
    publishedRoutesJson = routesJson;
    snapshot = serversOnly ? { version: ++version, routes: snapshot!.routes, servers, createdAt: snapshot!.createdAt } : { version: ++version, routes, servers, createdAt: Date.now() };
    if (!serversOnly) routesVersion = version;
    backendPods = new Set(servers.flatMap((s) => s.endpoints.map((e) => e.name)));
    podEpochs = nextPodEpochs(podEpochs, backendPods, version);
    const r = describeResources(snapshot, source, untargeted, serversOnly);
    ops.info(version === 1 ? 'resources' : 'reload', r.message, r.fields);
    if (routes.length === 0 && settings.source === 'file') {
      ops.warn('resources', settings.gateway === null
        ? `no ModelRoute in ${settings.resources}: every inference request gets 404 until a route is added`
        : `no ModelRoute in ${settings.resources} is bound to Gateway ${settings.gateway} (ROUTER_GATEWAY): every inference request gets 404 until one is`);
    }
    const l = describeLimitStores(routes, settings);
    if (l.message !== stores) ops.info('limits', (stores = l.message), l.fields);
    scraper.setTargets(servers);
    broadcast(serversOnly
      ? { t: 'core:servers', version, routesVersion, servers, createdAt: snapshot.createdAt!, podEpochs }
      : { t: 'core:snapshot', snapshot, routesVersion, podEpochs });
    updateReady();
  };

  // Resources first: an invalid file stops the router before any worker starts.
  let stopSource: () => Promise<void> | void;
  /** The primary's own metric series: in Kubernetes mode, the state of its watches of the API server. */
  let ownSeries: () => MetricJson[] = () => [];
  if (settings.source === 'file') {
    const source = new FileSource({
      file: settings.resources!,
      rules: { apiGroup: settings.apiGroup, redisCluster: settings.redisLimits.cluster, gateway: settings.gateway },
      maxBytes: settings.resourcesMaxBytes,
      log: (m, event) => (event === 'warning' ? ops.warn('resources', m) : event === 'not-served' ? ops.info('resources', m) : ops.warn('reload', m, { applied: false })),
      apply: (r) => publish(r.routes, r.servers.map((s) => ({ ...s, endpoints: s.endpoints ?? [] }))),
    });
    source.start();
    stopSource = () => source.stop();
  } else {
    const { missingKubeConfig, loadKubeConfig } = await import('../config/kubernetes-config-check.js');
    const missing = missingKubeConfig();
    if (missing !== null) throw new Error(missing);
    const kubeConfig = await loadKubeConfig();
    const { KubernetesSource } = await import('../config/kubernetes-source.js');
    const kube = new KubernetesSource({ apiGroup: settings.apiGroup, redisCluster: settings.redisLimits.cluster, namespace: settings.namespace, gateway: settings.gateway, kubeConfig, log: (m, level) => (level === 'warn' ? ops.warn('kubernetes', m) : ops.info('kubernetes', m)) });
    kube.onSnapshot((s) => publish(s.routes, s.servers));
    stopSource = () => kube.stop();
    ownSeries = () => kubernetesWatchSeries(kube.watchStates());
    void kube.start().then(
      () => ops.info('kubernetes', 'first full sync done'),
      // Stopped (a SIGTERM) before the first sync: the router is stopping, nothing failed.
      (err: Error) => (kube.stopped ? ops.info('kubernetes', 'stopped before the first full sync') : ops.error('kubernetes', err.message)),
    );
  }

  // An invalid auth file stops the router before any worker starts, like an invalid resources file.
  // The primary alone follows the file: each worker asks it for the config in use as it starts, and
  // is sent each valid change (worker/worker-auth.ts). Its modules are imported only when there is a file.
  const authModules = settings.authConfig === null ? null
    : await Promise.all([import('../auth/auth-source.js'), import('../auth/auth-config-wire.js')]);
  const authFile = authModules === null ? null : authModules[0].startAuthSource(settings.authConfig, (m, level) => ops[level]('auth', m), {
    redisCluster: settings.redisLimits.cluster,
    // Each worker asks for the config in use as it starts (none has yet at the first); a change goes to every worker there is.
    onApplied: (config) => broadcast({ t: 'core:auth', config: authModules[1].authConfigToWire(config) }),
  });
  // So does a missing token ranks file (each worker builds its table from it).
  if (settings.tokenizer.estimator === 'bpe') o200kRanksFile();

  // `::` on a kernel without IPv6 becomes 0.0.0.0 (listen-host.ts), before anything listens.
  const listen = await chooseListenHost(settings.host);
  if (listen.note !== null) ops.warn('start', listen.note, { host: listen.host, given: settings.host });
  host = listen.host;

  // A port another router or server holds stops the router before any worker starts (port-claim.ts):
  // uWS's workers share their port with SO_REUSEPORT, which would otherwise let them join the other's.
  await claimPort(host, settings.port);

  const store = new CounterStore();
  // Each worker's lease holds 1/(8 × workers) of what is free: together at most 1/8 of it.
  attachLocalLimitHost(cluster, store, { leaseDivisor: settings.localLeases ? 8 * settings.workers : 0 });
  /** HTTPS: the certificate's expiry (tls-certificate-series.ts), set below. */
  let tlsSeries: () => MetricJson[] = () => [];
  attachMetricsPrimary(cluster, { backendPods: () => backendPods, ownSeries: () => [...ownSeries(), ...tlsSeries()] });
  // Passive health is decided here too, once per instance, from the workers' reports.
  const podHealth = new PodHealthHub(settings.scheduler.outlier, systemClock, (level, m) => ops[level]('scheduler', m));
  // Prefix affinity learned by any worker is shared with the others.
  const sc = settings.scheduler.config;
  const prefixHub = sc.weights['prefix-cache'] > 0 ? new PrefixHub(sc.prefixCapacity) : null;
  const stopLoadShare = attachPodLoadPrimary(cluster, scraper, podHealth, prefixHub, settings.scheduler.podMetricsIntervalMs, (m) => {
    for (const w of Object.values(cluster.workers ?? {})) if (w?.isConnected()) w.send(m);
  });

  // The workers read the command line again: a --host after the given one (the last one wins) moves them.
  const args = host === settings.host ? workerArgs : [...workerArgs, '--host', host];
  cluster.setupPrimary({ args, execArgv: workerExecArgv(process.execArgv, process.env.NODE_OPTIONS, settings.workerSemiSpaceMb), silent: false });
  // HTTPS: the workers open their listener from the primary's copy of the pair it checked (tls-served-files.ts).
  if (settings.tls !== null) checkServable(settings.tls);
  const served = settings.tls === null ? null : new TlsServedFiles(settings.tls);
  const startPair = settings.tls?.pair ?? null;
  if (served !== null && startPair !== null) {
    served.write(startPair);
    process.once('exit', () => served.remove()); // also when the primary fails
    if (served.fallback !== null) ops.warn('tls', `workers read ROUTER_TLS_CERT_FILE and ROUTER_TLS_KEY_FILE themselves: ${served.fallback}; a worker started while the files are rewritten may fail to start`);
  }
  // A serving worker silent for ROUTER_WORKER_WATCHDOG is killed, then restarted as any that dies.
  const watchdog = settings.workerWatchdogMs === 0 ? null : new WorkerWatchdog<Worker>({
    limitMs: settings.workerWatchdogMs, everyMs: WATCHDOG_EVERY_MS, now: () => performance.now(),
    stuck: (w, silentMs) => {
      ops.error('worker', `worker ${w.process.pid} has said nothing for ${(silentMs / 1000).toFixed(1)} s (ROUTER_WORKER_WATCHDOG): ` +
        'its event loop is blocked or its process stopped; killing it (SIGKILL); the requests it had in flight are lost', { worker: w.process.pid ?? null });
      w.process.kill('SIGKILL');
    },
  });
  const watchdogTimer = watchdog === null ? null : setInterval(() => watchdog.check(), WATCHDOG_EVERY_MS);
  watchdogTimer?.unref();
  const forkWorker = (): Worker => {
    const files = served?.files;
    const w = cluster.fork(files === undefined ? { ROUTER_WORKER: '1' } : { ROUTER_WORKER: '1', ROUTER_TLS_CERT_FILE: files.certFile, ROUTER_TLS_KEY_FILE: files.keyFile });
    dropMessagesToDeadWorker(w, (m) => ops.warn('worker', `worker ${w.process.pid}: ${m}`));
    w.on('message', (m: unknown) => {
      watchdog?.heard(w);
      if (!isCoreMessage(m)) return;
      const msg = m as WorkerToPrimary;
      if (msg.t === 'core:ping') {
        w.send({ t: 'core:pong' } satisfies PrimaryToWorker);
      } else if (msg.t === 'core:starting') {
        // The configuration before the port (worker.ts): a worker replacing another answers as the
        // others do from its first connection. Snapshots published after this reach it too.
        sendSnapshot(w);
        w.send({ t: 'core:ready', ready: wasReady } satisfies PrimaryToWorker);
        w.send({ t: 'core:listen' } satisfies PrimaryToWorker);
      } else if (msg.t === 'core:listening') {
        // A worker still starting when the drain began ignored core:drain (it was not listening).
        // It serves its drain delay as the others do theirs, with the configuration it has.
        if (draining) {
          w.send({ t: 'core:drain' } satisfies PrimaryToWorker);
          return;
        }
        listening.add(w.id);
        watchdog?.watch(w);
        updateReady();
      } else if (msg.t === 'core:applied') {
        applied.add(w.id);
        updateReady();
      } else if (msg.t === 'core:snapshot-wanted') {
        // Rare: a worker that kept an older snapshot (it refused one) gets a change of ModelServers only.
        ops.info('reload', `worker ${w.process.pid} has the routes of another snapshot than ${routesVersion}: sent it snapshot ${snapshot?.version ?? 'none'} whole`);
        sendSnapshot(w);
      } else if (msg.t === 'core:auth-wanted') {
        if (authFile !== null && authModules !== null) w.send({ t: 'core:auth', config: authModules[1].authConfigToWire(authFile.config) } satisfies PrimaryToWorker);
      } else if (msg.t === 'core:fatal') {
        ops.error('worker', `worker ${w.process.pid} failed: ${msg.message}`);
      }
    });
    // A worker that starts while a snapshot exists gets it as soon as it listens (above).
    return w;
  };
  // Every worker is forked through it: a certificate rotation replaces those that opened an earlier pair.
  const rolling = new RollingReplacement<Worker>({
    workers: () => Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined),
    fork: forkWorker,
    write: (pair) => served!.write(pair),
    prune: () => served!.prune(),
    listening: (w) => listening.has(w.id),
    serving: (w) => listening.has(w.id) && (snapshot === null || applied.has(w.id)),
    retired: (w) => {
      watchdog?.forget(w);
      listening.delete(w.id);
      applied.delete(w.id);
      updateReady();
    },
    stopping: () => draining,
    timers: nodeTimers,
  });
  const fork = (): Worker => rolling.fork();

  cluster.on('exit', (w, code, signal) => {
    watchdog?.forget(w);
    const wasListening = listening.delete(w.id);
    applied.delete(w.id);
    const was = rolling.exited(w);
    if (was.role === 'retired') {
      // Replaced in a certificate rotation: it drained alone and exits 0.
      if (code !== 0 || signal !== null) {
        ops.warn('worker', `worker ${w.process.pid} exited (${signal ?? `code ${code}`}) while draining to be replaced; any requests it had in flight were lost`,
          { worker: w.process.pid ?? null, code, signal });
      }
      return;
    }
    if (draining) {
      // A drained worker exits 0; one killed (out of memory) or failing meanwhile dropped its
      // requests unanswered and its unwritten records. Those the deadline killed were told above.
      if ((code !== 0 || signal !== null) && !pastDeadline) {
        ops.warn('worker', `worker ${w.process.pid} exited (${signal ?? `code ${code}`}) during the drain; any requests it had in flight were lost`,
          { worker: w.process.pid ?? null, code, signal });
      }
      return;
    }
    // In a certificate rotation, none is restarted for a worker whose replacement is started, nor
    // for a new worker while the one it was to replace runs (the rotation stops and is tried again).
    const rotation = was.role === 'replaced'
      ? `; worker ${was.by.process.pid}, started to replace it in a certificate rotation, takes its place`
      : was.role === 'spare' ? `; it was started to replace worker ${was.replaces.process.pid} in a certificate rotation, which keeps serving` : '';
    ops.warn('worker', `worker ${w.process.pid} exited (${signal ?? `code ${code}`})${wasListening ? '' : ' before listening'}${rotation}`,
      { worker: w.process.pid ?? null, code, signal });
    updateReady();
    // Every death counts, restarted or not: a rotation's new workers dying one after another are a loop too.
    if (!guard.allowRestart()) {
      ops.error('worker', 'workers are crashing in a loop (more than 5 deaths in 30s); stopping the router');
      void shutdown(1);
      return;
    }
    if (was.role !== 'worker') return;
    const next = fork();
    ops.info('worker', `worker restarted: ${next.process.pid} replaces ${w.process.pid}`, { worker: next.process.pid ?? null, replaces: w.process.pid ?? null });
  });

  const shutdown = async (code: number): Promise<void> => {
    if (draining) return;
    draining = true;
    // The drain has its own deadline for workers that do not end.
    watchdog?.forgetAll();
    if (watchdogTimer !== null) clearInterval(watchdogTimer);
    stopTls();
    drainStartedAt = performance.now();
    if (code === 0) {
      ops.info('drain', `draining: readiness off, /readyz answers 503 for ${settings.drainDelayMs} ms, then stopping listeners, ` +
        `finishing in-flight requests (up to ${settings.drainTimeoutMs} ms)`, { delayMs: settings.drainDelayMs, timeoutMs: settings.drainTimeoutMs });
    } else ops.warn('drain', 'stopping');
    // core:drain alone turns a worker's readiness off, in the same step as it starts draining: a
    // core:ready false sent before it could be handled alone, and a /readyz probe between the two
    // would read 'starting' instead of 'draining'.
    broadcast({ t: 'core:drain' });
    // The resources, the auth file and the pods' load and health are followed until the workers
    // have exited: they serve new requests during the drain delay, and requests on kept-alive
    // connections after it, which must not go to a pod that left the configuration meanwhile.
    const deadline = setTimeout(() => {
      pastDeadline = true;
      ops.warn('drain', 'drain timeout passed; killing remaining workers');
      for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGKILL');
    }, settings.drainDelayMs + settings.drainTimeoutMs + WORKER_KILL_GRACE_MS);
    deadline.unref();
    await waitForWorkersToExit();
    clearTimeout(deadline);
    served?.remove();
    await stopSource();
    authFile?.stop();
    stopLoadShare();
    ops.info('exit', `exit ${code}`, { code });
    process.exit(code);
  };

  /**
   * SIGTERM or SIGINT: the drain begins; once it is under way, another changes nothing (the drain
   * goes on to its end) but is said, with how long is left and how to stop at once.
   */
  const onStopSignal = (signal: NodeJS.Signals): void => {
    if (!draining) {
      void shutdown(0);
      return;
    }
    const again = drainAgainLine(signal, performance.now() - drainStartedAt, settings.drainDelayMs, settings.drainTimeoutMs);
    ops.warn('drain', again.message, again.fields);
  };
  startDone();
  process.on('SIGTERM', onStopSignal);
  process.on('SIGINT', onStopSignal);
  process.on('SIGHUP', () => {
    ops.info('reopen', 'SIGHUP: workers reopen the access log');
    broadcast({ t: 'core:reopen-log' });
  });

  let stopTls = (): void => undefined;
  if (settings.tls !== null && startPair !== null) {
    const watch = watchTlsFiles(settings.tls, startPair, (pair) => rolling.roll(pair), ops);
    tlsSeries = () => tlsCertificateSeries(watch.served().notAfter);
    stopTls = () => watch.stop();
  }

  for (let i = 0; i < settings.workers; i++) fork();
  ops.info('workers', `started ${settings.workers} workers on ${host}:${settings.port}`, { workers: settings.workers });
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

/** Where spans go, for the start line: the endpoint without its query (which may hold a token). */
function traceTarget(endpoint: string): string {
  try {
    const u = new URL(endpoint);
    return `${u.origin}${u.pathname}`;
  } catch {
    return 'endpoint';
  }
}
