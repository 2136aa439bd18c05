import type { ResourceSnapshot } from '../config/resource-types.js';
import { buildApp, CLIENT_TIMEOUT_SECONDS, closeConnections } from '../http/app.js';
import { drainState } from '../http/drain-state.js';
import { unsentClientBytes } from '../http/client-send-queue.js';
import { closeWhenSent } from './close-when-sent.js';
import { cutArrivingBodies } from '../http/arriving-bodies.js';
import { RouterError } from '../errors.js';
import { Exchange } from '../http/exchange.js';
import { releaseBody } from '../http/body-pool.js';
import { loadUws } from '../http/uws.js';
import { createAccessLog } from '../observe/access-log.js';
import { recordFromContext } from '../observe/access-record.js';
import { isCoreMessage, type PrimaryToWorker, type WorkerToPrimary } from '../primary/messages.js';
import { LimiterRegistry } from '../ratelimit/registry.js';
import { LocalLimitClient } from '../ratelimit/local/limit-client.js';
import { RouteTable } from '../route/route-table.js';
import { createTokenCounter } from '../tokens/create-token-counter.js';
import { ThreadParser } from '../api/thread-parse.js';
import { keepParsedConversations, parsedConversations, parsedSystemPrompts } from '../api/api-registry.js';
import { EndpointRegistry } from '../upstream/endpoint-registry.js';
import { runPipeline, type PipelineServices } from './pipeline.js';
import { startWorkerAuth } from './worker-auth.js';
import type { Settings } from '../settings.js';
import { RouterMetrics } from '../observe/metrics.js';
import { meteredLimiters } from '../ratelimit/metered.js';
import { metricsHandler } from '../observe/metrics-answer.js';
import { WorkerMetricsLink } from '../observe/metrics-cluster.js';
import { PrimaryHeartbeat } from './primary-heartbeat.js';
import { DescriptorGuard, descriptorReserve } from './descriptor-guard.js';
import { openFileLimit } from '../open-file-limit.js';
import { OpsLog } from '../observe/ops-log.js';
import { SchedulerMetrics } from '../observe/scheduler-metrics.js';
import type { PodEpochs } from '../observe/backend-pod-epochs.js';
import { Scheduler } from '../pick/scheduler.js';
import { systemClock } from '../clock.js';
import { nodeTimers } from '../timers.js';
import { bodyMemoryStats, sizeSharedBodyMemory } from '../body-memory.js';
import { FairGates } from '../pick/fair-gate.js';
import { isLoadShare, PodLoadReceiver } from '../pick/pod-load-share.js';
import { isEjectionShare, PodHealthShare } from '../pick/pod-health-share.js';
import { isPrefixPairs, MSG_PREFIX, PrefixShare, type PrefixShareMessage } from '../pick/prefix-share.js';
import cluster from 'node:cluster';
import { Tracer, type RequestSpan } from '../observe/tracer.js';
import { startTicking, stopTicking, type Ticking } from '../interval-ticker.js';
import { performance } from 'node:perf_hooks';
import { exitAfter, exitOnFailure } from '../process-failure.js';
import { warningsToOpsLog } from '../process-warnings.js';

const NO_HEADERS: ReadonlySet<string> = new Set();
/** Heartbeat to the primary: a tick each second, a ping after 1.5 s without a message from it; not ready after 3 s. */
const HEARTBEAT_EVERY_MS = 1000;
const HEARTBEAT_BOUND_MS = 3000;

function send(m: WorkerToPrimary): void {
  process.send?.(m);
}

/** A worker process: one uWS app on the shared port, fed compiled snapshots by the primary. */
export async function runWorker(settings: Settings): Promise<void> {
  const ops = new OpsLog(settings.logFormat, 'worker');
  warningsToOpsLog(ops);
  // Node's cluster module's own listener, which ends a worker at once (exit 0) when its channel to
  // the primary closes unexpectedly: replaced below by one that writes the records held first.
  const clusterOnDisconnect = process.listeners('disconnect');
  const uws = loadUws(undefined, settings.maxHeaderBytes);
  // Its warnings (a failed or slow write, records dropped) are lines of the operational log.
  const accessLog = createAccessLog(settings.accessLog, { warn: (m) => ops.warn('access-log', m) });
  let listenSocket: unknown = null;
  /** The first listen succeeded (the listener may be closed since: drained, or paused by the descriptor guard). */
  let listened = false;
  /** The port the listener took (the client connections' local port). */
  let listenPort = settings.port;
  /** While starting: resolves the wait for the primary's core:listen. */
  let startListening: (() => void) | null = null;
  let table: RouteTable | null = null;
  /** The backend pods' epochs of the snapshot `table` is (told with each metrics answer: observe/backend-pod-epochs.ts). */
  let podEpochs: PodEpochs | null = null;
  const metrics = new RouterMetrics({ knownModel: (m) => table !== null && table.route(m) !== undefined });
  const tokens = createTokenCounter(settings.tokenizer, { onPoolTask: (ms) => metrics.tokenizerPoolTask(ms) });
  keepParsedConversations(settings.tokenizer.conversationBytes);
  const threadParser = tokens.threads === null || settings.tokenizer.parseMinBytes === 0 ? null
    : new ThreadParser(tokens.threads, settings.tokenizer.parseMinBytes);
  const endpoints = new EndpointRegistry({
    connections: settings.upstreamConnections,
    idleTimeoutMs: settings.upstreamIdleTimeoutMs,
    connectTimeoutMs: settings.upstreamConnectTimeoutMs,
    idleRaceMs: settings.upstreamIdleRaceMs,
  });
  // Fair queueing: this worker's share of each ModelServer's places in flight and in the queue.
  const fairGates = settings.fairness === null ? null
    : new FairGates(settings.fairness, settings.workers, systemClock, nodeTimers, (server, ms) => metrics.fairQueueWaited(server, ms));
  const auth = await startWorkerAuth(settings.authConfig, (m) => ops.warn('auth', m));

  let ready = false;
  const heartbeat = new PrimaryHeartbeat({ everyMs: HEARTBEAT_EVERY_MS, boundMs: HEARTBEAT_BOUND_MS, ping: () => send({ t: 'core:ping' }), log: (level, m) => ops[level]('readiness', m) });
  // A worker with no file descriptor free stops accepting instead of spinning on its listener
  // (descriptor-guard.ts); the other workers take the connections meanwhile.
  // Each second while serving, the primary's watchdog hears this worker's event loop turn.
  const alive: Ticking = { advance: () => send({ t: 'core:alive' }) };
  let listenerPauses = 0;
  const descriptors = new DescriptorGuard({
    reserve: () => descriptorReserve(openFileLimit()), limit: () => openFileLimit(), everyMs: HEARTBEAT_EVERY_MS,
    pause: () => {
      if (listenSocket !== null) uws.us_listen_socket_close(listenSocket as never);
      listenSocket = null;
    },
    resume: () => {
      if (draining || stopping) return false;
      // uWebSockets.js calls back before listen() returns.
      app.listen(settings.host, settings.port, (sock) => {
        if (sock) listenSocket = sock;
      });
      return listenSocket !== null;
    },
    paused: () => listenerPauses++,
    log: (level, m) => ops[level]('descriptors', m),
  });
  /** SIGTERM: /readyz answers 503 for ROUTER_DRAIN_DELAY while requests are still served. */
  let stopping = false;
  /** Draining alone, to be replaced (core:retire): /readyz still says whether the instance is ready. */
  let retiring = false;
  let draining = false;
  let inflight = 0;
  let drainResolve: (() => void) | null = null;
  /**
   * Ends the requests in flight now, `why` said in their answers and records: those whose body is
   * still arriving by the front (503), those at a pod by closing its pools (the pipeline ends and
   * records them: 502 when nothing of the answer was sent yet, else the answer is cut). Whole
   * answers are written at the end of a turn (Exchange.endBuffered): the last ones go out now,
   * before anything after this can reach process.exit within this turn. Answers a client is still
   * taking (slowly, or not at all) are cut, and recorded, after those: their pod exchanges are
   * over, so nothing before ends them.
   */
  const cutInFlight = (why: string): void => {
    fairGates?.cutWaiting();
    cutArrivingBodies(new RouterError('upstream_error', `${why} while the request body was still arriving`, 503, null, 'router_stopping'), finish);
    void endpoints.closeAll(why);
    Exchange.flushAnswers();
    Exchange.cutAnswersGoingOut(`${why} while the answer was still going out to the client`);
  };
  /**
   * After a failure (process-failure.ts) or with the primary gone: stop taking connections, end
   * what is in flight (cutInFlight, and answers still going out to a client), and write the
   * access-log records of every request, those ended here included. Bounded by the caller.
   */
  const saveRecords = async (why: string): Promise<void> => {
    ready = false;
    stopping = true;
    drainState.draining = true;
    drainState.closing = true;
    heartbeat.stop();
    descriptors.stop();
    stopTicking(alive, HEARTBEAT_EVERY_MS);
    if (listenSocket !== null) uws.us_listen_socket_close(listenSocket as never);
    listenSocket = null;
    cutInFlight(why);
    // The requests cut end within a turn or two (a pod exchange's failure goes through the pipeline).
    for (let i = 0; i < 50 && inflight > 0; i++) await new Promise((r) => setTimeout(r, 10));
    await accessLog.flush();
  };
  exitOnFailure({ ops, cleanup: () => saveRecords('the router\'s worker failed') });
  const emptyModels = JSON.stringify({ object: 'list', data: [] });
  metrics.bindSources({
    fairQueued: fairGates === null ? undefined : () => fairGates.queued(),
    accessLogDropped: () => accessLog.dropped,
    listenerPauses: () => listenerPauses,
    upstreamPods: () => endpoints.states(),
    tokenCounts: () => tokens.stats,
    tokenizerPoolTasks: () => tokens.poolInFlight,
    threadParses: threadParser === null ? undefined : () => threadParser.stats,
    conversations: () => parsedConversations,
    systemPrompts: () => parsedSystemPrompts,
    bodyMemory: bodyMemoryStats,
  });
  // Counters of a pod go once it left the configuration (backend-pod-series.ts).
  const schedulerMetrics: SchedulerMetrics = new SchedulerMetrics(metrics.registry, () => ejectedPods(endpoints), () => scrapedPods(endpoints),
    (): number => scheduler.prefix?.size ?? 0, () => livePods(endpoints));
  // Passive health is decided once per instance by the primary from every worker's outcomes.
  const podHealth = new PodHealthShare(() => endpoints.states(), systemClock, (m) => process.send?.(m), cluster.worker?.id ?? 0,
    (pod) => schedulerMetrics.ejected(pod));
  const scheduler: Scheduler = new Scheduler({
    settings: settings.scheduler,
    clock: systemClock,
    metrics: schedulerMetrics,
    log: (level, m) => ops[level]('scheduler', m),
    news: () => podHealth.soon(),
    sharePrefixUpTo: PREFIX_SHARE_PER_INTERVAL,
    serverNow: (key) => table?.server(key),
  });
  const prefixShare = scheduler.prefix === null ? null : new PrefixShare(scheduler.prefix, (key) => endpoints.get(key));
  const podLoad = new PodLoadReceiver(() => endpoints.states(), systemClock, 3 * settings.scheduler.podMetricsIntervalMs);
  // On the process's timer of its period (interval-ticker.ts), which the heartbeat shares by default.
  const podLoadReport: Ticking = {
    advance: () => {
      const inflight = podLoad.report();
      if (inflight !== null) process.send?.(inflight);
      podHealth.flush();
      const learned = prefixShare?.report();
      if (learned != null) process.send?.(learned);
    },
  };
  startTicking(podLoadReport, settings.scheduler.podMetricsIntervalMs);
  process.on('message', (m: unknown) => {
    if (isLoadShare(m)) {
      podLoad.apply(m);
      if (Array.isArray(m.ejected)) podHealth.applyRows(m.ejected);
    } else if (isEjectionShare(m)) {
      podHealth.apply(m);
    } else if (prefixShare !== null && isPrefixPairs(m, MSG_PREFIX)) {
      prefixShare.apply(m as PrefixShareMessage);
    }
  });
  const tracer = settings.tracing === null ? null : new Tracer(settings.tracing, (level, m) => ops[level]('tracing', m));
  if (tracer !== null) metrics.bindSources({ traceSpansDropped: () => tracer.exporter });
  // Shadow limits: counted always, logged once a minute at most (what they would have rejected).
  let shadowLoggedAt = -Infinity;
  let shadowUnlogged = 0;
  const metered = meteredLimiters({
    limiterDecision: (mode, ms) => metrics.limiterDecision(mode, ms),
    shadowRejected: (key, direction) => {
      metrics.shadowRejected(key, direction);
      shadowUnlogged++;
      const now = Date.now();
      if (now - shadowLoggedAt < 60_000) return;
      shadowLoggedAt = now;
      ops.info('limits', `shadow limit ${key} would have rejected ${shadowUnlogged} request(s) since the last such line (latest by ${direction}); not enforced`);
      shadowUnlogged = 0;
    },
  });
  const limiters = new LimiterRegistry(new LocalLimitClient(), settings.redisLimits, {
    // A store unreachable or gone is a warning: its failure mode decides meanwhile (`closed`: 503s).
    // An error: a Redis user that may not run the commands the scripts call (it needs the operator).
    log: (m, level) => (level === 'error' ? ops.error('limits', m) : level === 'warn' ? ops.warn('limits', m) : ops.info('limits', m)),
    onStoreError: (store) => metrics.redisError(store),
    onFailureModeDecision: (mode) => metrics.failureModeDecision(mode),
    onLease: (event) => metrics.leaseEvent(event),
    onRecallWait: (admitted) => metrics.recallWait(admitted),
  }, () => [...(table === null ? [] : table.rateLimits), ...(auth === null ? [] : auth.rateLimits())]);
  metrics.bindSources({ limitStores: () => limiters.storeStates() });
  // A Redis store no configuration names any more is closed after RETIRED_STORE_CLOSE_MS.
  setInterval(() => void limiters.retire(Date.now()), RETIRE_CHECK_MS).unref();

  let finished = 0;
  const finish = (x: Exchange): void => {
    // An answer whose last bytes have not gone out yet: recorded once they did (or were cut).
    if (x.holdRecord(finish)) return;
    const ctx = x.ctx;
    if (ctx.tEnd === 0) ctx.tEnd = performance.now(); // the pipeline sets it before waiting on a limit store
    if (tracer !== null && x.traceSpan !== null) tracer.end(x.traceSpan as RequestSpan, x);
    if (accessLog.enabled) accessLog.log(recordFromContext(ctx));
    metrics.observeRequest(ctx, ctx.tFirstByte > 0 ? ctx.tFirstByte - ctx.t0 : null);
    releaseBody(x);
    finished++;
    inflight--;
    if (draining && inflight === 0 && drainResolve !== null) drainResolve();
  };

  const services: PipelineServices = {
    settings,
    table: () => table,
    tokens,
    limiterFor: (spec) => metered(limiters.limiterFor(spec), spec),
    authorize: auth === null ? null : auth.authorize,
    tracer,
    finish,
    scheduler,
    rateLimitRejected: (key, direction) => metrics.rateLimitRejected(key, direction),
    fairGates,
    threadParser,
  };

  // Bodies up to ROUTER_MAX_BODY_BYTES find their shared memory again (body-memory.ts).
  sizeSharedBodyMemory(settings.maxBodyBytes);
  const metricsLink = new WorkerMetricsLink(metrics, { podEpochs: () => podEpochs });
  const app = buildApp(uws, {
    maxBodyBytes: settings.maxBodyBytes,
    sharedBodyMinBytes: threadParser === null ? 0 : threadParser.minBytes,
    matchHeaderNames: () => (table === null ? NO_HEADERS : table.matchHeaderNames),
    stripAuthorization: auth !== null,
    draining: () => drainState.draining,
    // A worker retired alone (core:retire) says what the instance is: the others serve on.
    ready: () => ready && (!stopping || retiring) && table !== null && (retiring || heartbeat.alive()),
    modelsJson: () => (table === null ? emptyModels : table.modelsJson),
    modelJson: (id) => (table === null ? undefined : table.modelJson(id)),
    metrics: metricsHandler(metrics, metricsLink),
    accepted: () => {
      inflight++;
    },
    run: (x) => runPipeline(x, services),
    finish,
  }, settings.tls);

  /**
   * Resolves once no request is in flight and none was accepted or ended for longer than the
   * client timeout (so every kept-alive connection had a request answered with its close, or was
   * closed idle), or at `deadline`. Reads the counters the requests keep (nothing is added to them).
   */
  const quietConnections = async (deadline: number): Promise<void> => {
    let seenFinished = -1;
    let quietSince = Date.now();
    while (Date.now() < deadline) {
      const now = Date.now();
      if (inflight > 0 || finished !== seenFinished) {
        seenFinished = finished;
        quietSince = now;
      } else if (now - quietSince > (CLIENT_TIMEOUT_SECONDS + 1) * 1000) return;
      await new Promise((r) => setTimeout(r, Math.min(200, Math.max(1, deadline - now))));
    }
  };
  /**
   * Drains as on SIGTERM. `retire`: this worker alone is replaced (a certificate rotation,
   * primary/tls-rotation.ts) while the others, and its replacement, serve on: no drain delay
   * (readiness is the instance's, not this worker's: a load balancer has nothing to stop), the
   * listener is closed at once; the rest is the same.
   */
  const drain = async (retire = false): Promise<void> => {
    if (stopping) return;
    stopping = true;
    retiring = retire;
    if (!retire) ready = false;
    // Every answer closes its connection from now on, as /healthz's and /readyz's do: a client on
    // a kept-alive connection (which a load balancer's change does not move) reconnects, and goes
    // to another instance once the balancer has seen /readyz fail. Retired alone, only once its
    // listener is closed (below).
    if (!retire) drainState.draining = true;
    // Load balancers see /readyz fail and stop sending before the listener closes; until
    // then in-flight and new requests are served.
    if (settings.drainDelayMs > 0 && !retire) await new Promise((r) => setTimeout(r, settings.drainDelayMs));
    draining = true;
    if (!retire) ready = false;
    heartbeat.stop();
    descriptors.stop();
    // core:alive goes on while it drains: the primary's watchdog watches a worker drained by a
    // signal of its own (one the primary drains or retires, it stops watching).
    stopTicking(podLoadReport, settings.scheduler.podMetricsIntervalMs);
    auth?.stop();
    // Retired while the other workers take new connections: closed after this turn's I/O, so that
    // connections the kernel queued for it and reported in the same poll are accepted first (those
    // queued when it closes are reset, unless net.ipv4.tcp_migrate_req moves them: deploy.md).
    if (retire) await new Promise((r) => setImmediate(r));
    if (listenSocket !== null) uws.us_listen_socket_close(listenSocket as never);
    listenSocket = null;
    // A client whose kept-alive connection a retired worker's answer closes reconnects at once:
    // with the listener closed first, the kernel cannot queue that connection for it as it closes.
    drainState.draining = true;
    // Everything below, the last records' writing included, ends by this deadline (a little after
    // it for requests cut when it passes): the primary kills workers 5 s after it.
    const drainDeadline = Date.now() + settings.drainTimeoutMs;
    // Retired alone, the worker also waits for its kept-alive connections to go: each request on
    // one is answered with its close, and one left idle is closed by the client timeout, as at
    // any time. Closing an idle one now could cross a request its client is sending on it.
    if (retire) await quietConnections(drainDeadline);
    if (inflight > 0) {
      await new Promise<void>((resolve) => {
        drainResolve = resolve;
        setTimeout(resolve, settings.drainTimeoutMs).unref();
      });
    }
    // Requests still in flight after the drain timeout (a long stream) are cut now, while the
    // access log is open: their pod exchanges fail, the pipeline ends them (closing the client's
    // connection) and records them; the loop below waits for those records.
    // Those whose body is still arriving (a stalled upload) have no pod exchange yet: the front ends them.
    // With none in flight, whole answers queued for the end of this turn still go out now.
    const timedOut = inflight > 0;
    if (timedOut) cutInFlight(`the router is stopping: ROUTER_DRAIN_TIMEOUT (${settings.drainTimeoutMs} ms) passed`);
    else Exchange.flushAnswers();
    // From here on a request arriving on an old keep-alive connection is not answered (its
    // connection is closed), so the records flushed below are those of every answered request.
    drainState.closing = true;
    // A sink that never drains must not hold the exit past the drain timeout; requests cut when it
    // passed get CUT_RECORDS_MS to be recorded and written.
    const flushDeadline = Math.max(drainDeadline, Date.now() + CUT_RECORDS_MS);
    // Kept-alive connections (a stream's begun before the drain, which did not say close, or one
    // idle since) are ended once nothing is in flight, rather than at the exit: a client then sees
    // them close instead of sending a request that would be closed unanswered. Not while an
    // answer a client reads slowly is still going out: uWS may hold its last bytes, which closing
    // the connections, or the exit, would drop. They get until the drain deadline, however long
    // the client takes (the requests cut at it: until they are recorded). Watched beside the
    // flush of the last records, which an output that does not take them holds up.
    const connectionsClosed = closeWhenSent({
      inflight: () => inflight,
      unsent: () => unsentClientBytes(listenPort),
      tailMayBeBuffered: () => drainState.tailMayBeBuffered,
      close: () => closeConnections(app),
      deadline: flushDeadline,
    });
    for (let i = 0; i < 100 && Date.now() < flushDeadline; i++) {
      const before = finished;
      await Promise.race([accessLog.flush(), new Promise((r) => setTimeout(r, Math.max(1, flushDeadline - Date.now())).unref())]);
      if (inflight === 0 && finished === before) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    if (!(await connectionsClosed)) {
      const unsent = unsentClientBytes(listenPort);
      if (unsent !== null && unsent > 0) {
        ops.warn('drain', `closing client connections with ${unsent} bytes of answers not yet taken by their clients: ROUTER_DRAIN_TIMEOUT (${settings.drainTimeoutMs} ms) passed`);
      }
    }
    await Promise.race([
      Promise.allSettled([tokens.close(), limiters.close(), endpoints.closeAll(), accessLog.close(), tracer?.close()]),
      new Promise((r) => setTimeout(r, 2000).unref()),
    ]);
    // Records an output did not take by now are lost with the process: counted and said on stderr.
    await Promise.race([accessLog.abandon(), new Promise((r) => setTimeout(r, 500).unref())]);
    // Every request is counted by now: the primary keeps these counts as this worker's last (a
    // worker retired alone would otherwise lose what it counted since the last scrape).
    if ((await metricsLink.final(FINAL_METRICS_WAIT_MS)) === false) ops.warn('metrics', `the primary did not take this worker's final counts within ${FINAL_METRICS_WAIT_MS} ms: what it counted since the last scrape is not in /metrics`);
    process.exit(0);
  };

  process.on('message', (m: unknown) => {
    if (!isCoreMessage(m)) return;
    const msg = m as PrimaryToWorker;
    switch (msg.t) {
      case 'core:snapshot':
      case 'core:servers': {
        // Once the drain is closing, the pools are closed (or idle): none is opened again.
        if (drainState.closing) break;
        let snapshot: ResourceSnapshot;
        if (msg.t === 'core:snapshot') snapshot = msg.snapshot;
        // None yet (still starting): the whole snapshot in use comes with the answer to core:starting.
        else if (table === null) break;
        else if (table.routesVersion === msg.routesVersion) snapshot = { version: msg.version, routes: table.routes, servers: msg.servers, createdAt: msg.createdAt };
        else {
          // Servers for routes this worker does not have (it kept an older snapshot): the whole one.
          send({ t: 'core:snapshot-wanted' });
          break;
        }
        const next = applySnapshot(snapshot, endpoints, settings, table, ops, msg.routesVersion);
        if (next !== table) podEpochs = msg.podEpochs;
        table = next;
        // The gates of ModelServers gone from the configuration, once nothing waits or is in flight there.
        if (fairGates !== null && next !== null) fairGates.forgetIdle((key) => next.server(key) !== undefined);
        schedulerMetrics.configurationApplied();
        if (next !== null) {
          void limiters.warmUp(next.rateLimits).then(() => send({ t: 'core:applied', version: next.version }));
        }
        break;
      }
      case 'core:pong': // counted by the listener of every message below
        break;
      case 'core:ready':
        ready = msg.ready;
        break;
      case 'core:drain':
        // Before listening, the primary tells it again once it listens (primary.ts, core:listening).
        // A worker that listened drains whether or not its listener is open now (the descriptor
        // guard closes it while no descriptor is free).
        if (listened) void drain();
        break;
      case 'core:retire':
        if (listened) void drain(true);
        break;
      case 'core:listen':
        startListening?.();
        break;
      case 'core:reopen-log':
        accessLog.reopen();
        break;
    }
  });
  // Orphaned (the primary died without draining us): stop at once rather than hold the port,
  // with the records of the requests answered written first (bounded: exitAfter).
  for (const l of clusterOnDisconnect) process.removeListener('disconnect', l);
  process.on('disconnect', () => {
    if (draining || stopping) return;
    ops.warn('worker', 'the primary is gone: closing the listener, ending the requests in flight, writing the access-log records held, then exiting (code 1)');
    exitAfter(() => saveRecords('the router\'s primary process is gone'), ops);
  });

  // The tokenizer threads load their encoder (~0.2 s) before this worker takes traffic.
  await tokens.ready();
  // The configuration (and readiness) first, then the port: a worker replacing another (after a
  // crash, in a certificate rotation) has the routes before the kernel hands it a connection, so
  // it answers as the others do rather than 503 not_configured. The primary answers core:starting
  // with the snapshot it has, if any, then core:listen.
  await new Promise<void>((resolve) => {
    startListening = resolve;
    send({ t: 'core:starting' });
  });
  startListening = null;
  await new Promise<void>((resolve, reject) => {
    app.listen(settings.host, settings.port, (sock) => {
      if (!sock) reject(new Error(`cannot listen on ${settings.host}:${settings.port}`));
      else {
        listenSocket = sock;
        listened = true;
        listenPort = uws.us_socket_local_port(sock as never);
        resolve();
      }
    });
  });
  // The primary coordinates shutdown; a direct signal to a worker drains it the same way.
  process.on('SIGTERM', () => void drain());
  process.on('SIGINT', () => undefined);
  process.on('SIGHUP', () => accessLog.reopen());
  // Every message from the primary shows it is alive, whichever part of the worker it is for.
  process.on('message', () => heartbeat.heard());
  send({ t: 'core:listening' });
  heartbeat.start();
  if (!draining && !stopping) {
    descriptors.start();
    startTicking(alive, HEARTBEAT_EVERY_MS);
  }
}

/**
 * How long the records of requests cut at the drain deadline get to be written. With the bounded
 * close (2 s) and the report of what an output did not take (0.5 s), a worker ends within 3.5 s of
 * the deadline, before the primary's SIGKILL (5 s after it).
 */
const CUT_RECORDS_MS = 1000;

/** How often a worker looks for Redis stores no configuration names any more (LimiterRegistry.retire). */
const RETIRE_CHECK_MS = 60_000;

/** How long a drained worker waits for the primary to take its final counts before it exits anyway. */
const FINAL_METRICS_WAIT_MS = 1000;

/** New (block hash → pod) pairs a worker sends the others per interval at most (more are not shared). */
const PREFIX_SHARE_PER_INTERVAL = 16_384;

function* livePods(endpoints: EndpointRegistry): Generator<string> {
  for (const e of endpoints.states()) yield e.name;
}

function* ejectedPods(endpoints: EndpointRegistry): Generator<string> {
  const now = systemClock();
  for (const e of endpoints.states()) if (e.health.ejectedUntil > now) yield e.name;
}

/** Each pod the primary scrapes, with 1 when this worker holds fresh values of it, else 0. */
function* scrapedPods(endpoints: EndpointRegistry): Generator<[string, number]> {
  const now = systemClock();
  for (const e of endpoints.states()) if (e.load.scraped) yield [e.name, e.load.scrapedUntil > now ? 1 : 0];
}

function applySnapshot(s: ResourceSnapshot, endpoints: EndpointRegistry, settings: Settings, prev: RouteTable | null, ops: OpsLog, routesVersion: number): RouteTable | null {
  try {
    // On the table in use: a snapshot with its routes array (core:servers) keeps them as compiled.
    return new RouteTable(s, endpoints, settings.upstreamTimeoutMs, Date.now(), prev, routesVersion);
  } catch (err) {
    ops.warn('reload', `snapshot ${s.version} rejected, keeping ${prev === null ? 'none' : `snapshot ${prev.version}`}: ${(err as Error).message}`,
      { applied: false, snapshot: s.version });
    return prev;
  }
}
