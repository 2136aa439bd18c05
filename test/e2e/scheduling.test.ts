import { afterEach, describe, expect, it } from 'vitest';
import { createServer as createHttpServer } from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { accessLogRecords, listenLocal, postJson, startLoggedRouter, startMock, startRouter, tempDir, type MockBackend, type Router, unusedPort, waitFor, writeFile } from '../helpers/processes.js';
import { onWholeRequests } from '../helpers/raw-requests.js';

function resources(pods: { name: string; port: number }[], policy = '', engine = ''): string {
  return `apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelServer
metadata: { name: sched-server, namespace: default }
spec:
${engine ? `  inferenceEngine: ${engine}\n` : ''}${policy}  endpoints:
${pods.map((p) => `    - { name: ${p.name}, address: "127.0.0.1:${p.port}" }`).join('\n')}
---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelRoute
metadata: { name: sched-route, namespace: default }
spec:
  modelName: m
  rules:
    - name: default
      targetModels: [{ modelServerName: sched-server }]
`;
}

async function metric(router: Router, name: string, labels: string): Promise<number> {
  const text = await (await fetch(`${router.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}


/**
 * A pod whose port is live but whose engine is not: it reads each request whole, then
 * `drop` closes the connection before any answer (reset: RST, not FIN, with `reset`), or `cut`
 * sends the head of a 200 and the start of its body (a stream's first event) and closes.
 * `idle-race` answers the first request of each connection whole and kept alive, and closes the
 * connection as the next one arrives (as a server closing an idle connection just then).
 */
async function brokenPod(mode: 'drop' | 'reset' | 'cut-stream' | 'cut-whole' | 'idle-race'): Promise<{ port: number; requests: () => number; close: () => Promise<void> }> {
  let requests = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => {});
    let served = 0;
    onWholeRequests(s, () => {
      requests++;
      if (mode === 'idle-race') {
        if (served++ > 0) {
          s.destroy();
          return;
        }
        const body = JSON.stringify({ id: 'c', object: 'text_completion', model: 'm', choices: [{ index: 0, text: 'ok', finish_reason: 'stop' }] });
        s.write(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`);
      } else if (mode === 'reset') s.resetAndDestroy();
      else if (mode === 'drop') s.destroy();
      else if (mode === 'cut-stream') {
        s.write('HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n');
        const event = 'data: {"id":"c","object":"text_completion","choices":[{"index":0,"text":"he"}]}\n\n';
        s.write(`${Buffer.byteLength(event).toString(16)}\r\n${event}\r\n`, () => setTimeout(() => s.destroy(), 20));
      } else {
        s.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 500\r\n\r\n{"id":"c","choices":[', () => setTimeout(() => s.destroy(), 20));
      }
    });
  });
  const port = await listenLocal(server);
  return {
    port,
    requests: () => requests,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

/**
 * A pod that fails half its requests: every second one is answered 500 at once, the others 200
 * after `slowMs` (so its good answers arrive after its failures, as under load).
 */
async function flakyPod(slowMs: number): Promise<{ port: number; requests: () => number; close: () => Promise<void> }> {
  let requests = 0;
  const server = createHttpServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const n = requests++;
      if (n % 2 === 1) {
        res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":{"message":"engine failed"}}');
        return;
      }
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({
          id: 'c', object: 'text_completion', model: 'm', choices: [{ index: 0, text: 'ok', finish_reason: 'stop' }],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        }));
      }, slowMs);
    });
  });
  const port = await listenLocal(server);
  return {
    port,
    requests: () => requests,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

const complete = async (router: Router): Promise<number> => {
  const r = await postJson(`${router.url}/v1/completions`, { model: 'm', prompt: 'x' });
  await r.text();
  return r.status;
};

describe('passive health and retries, real processes', () => {
  let router: Router | undefined;
  const mocks: MockBackend[] = [];
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    await router?.kill();
    await Promise.all(mocks.splice(0).map((m) => m.kill()));
    await Promise.all(closers.splice(0).map((c) => c()));
  });

  it('an unreachable pod is ejected, traffic goes to the healthy one, and it comes back once it answers', async () => {
    const ok = await startMock('pod-ok');
    mocks.push(ok);
    const deadPort = await unusedPort();
    router = await startRouter(resources([{ name: 'pod-ok', port: ok.port }, { name: 'pod-dead', port: deadPort }]), {
      workers: 1,
      env: { ROUTER_OUTLIER_CONSECUTIVE_FAILURES: '2', ROUTER_OUTLIER_BASE_EJECTION: '1s' },
    });
    for (let i = 0; i < 30; i++) expect(await complete(router)).toBe(200);
    expect((await ok.stats()).requests).toBe(30);
    // Two connect failures eject it; within the first ejection no request tries it again.
    expect(await metric(router, 'inference_router_pod_ejections_total', 'backend_pod="pod-dead",pod="pod-dead"')).toBeGreaterThanOrEqual(1);
    const failures = await metric(router, 'inference_router_upstream_connect_failures_total', 'backend_pod="pod-dead",pod="pod-dead"');
    expect(failures).toBeGreaterThanOrEqual(2);
    expect(failures).toBeLessThan(6);
    expect(await metric(router, 'inference_router_upstream_retries_total', 'server="default/sched-server"')).toBe(failures);
    await waitFor('ejection logged', () => /pod pod-dead ejected for \d+ms after 2 connect failure\(s\)\/timeout\(s\)\/reset\(s\) in a row/.test(router!.stderr()), 10_000);

    const back = await startMock('pod-dead', ['--port', String(deadPort)]);
    mocks.push(back);
    await waitFor('pod-dead back in rotation', async () => {
      await complete(router!);
      return (await back.stats()).requests > 0;
    }, 20_000, 50);
    // The primary decides and logs the return once its worker's report arrived.
    await waitFor('return logged', () => router!.stderr().includes('pod pod-dead answered again: back in rotation'), 10_000);
    expect(await metric(router, 'inference_router_pod_ejected', 'backend_pod="pod-dead",pod="pod-dead"')).toBe(0);
  });

  it('all pods ejected: they are still tried, and the answer is a clear 502', async () => {
    const [p1, p2] = [await unusedPort(), await unusedPort()];
    router = await startRouter(resources([{ name: 'dead-1', port: p1 }, { name: 'dead-2', port: p2 }]), {
      workers: 1,
      env: { ROUTER_OUTLIER_CONSECUTIVE_FAILURES: '1', ROUTER_OUTLIER_BASE_EJECTION: '1m' },
    });
    for (let i = 0; i < 3; i++) {
      const r = await postJson(`${router.url}/v1/completions`, { model: 'm', prompt: 'x' });
      expect(r.status).toBe(502);
      expect(await r.text()).toMatch(/cannot connect to any pod of ModelServer default\/sched-server \(tried dead-\d: connection refused, dead-\d: connection refused\)/);
    }
    expect(await metric(router, 'inference_router_pod_ejected', 'backend_pod="dead-1",pod="dead-1"')).toBe(1);
    expect(await metric(router, 'inference_router_pod_ejected', 'backend_pod="dead-2",pod="dead-2"')).toBe(1);
  });

  it('all pods ejected: the one whose ejection ends first is tried', async () => {
    const [p1, p2] = [await unusedPort(), await unusedPort()];
    router = await startRouter(resources([{ name: 'dead-1', port: p1 }, { name: 'dead-2', port: p2 }], '  trafficPolicy: { retry: { attempts: 0 } }\n'), {
      workers: 1,
      env: { ROUTER_OUTLIER_CONSECUTIVE_FAILURES: '1', ROUTER_OUTLIER_BASE_EJECTION: '1m' },
    });
    const tried = async (): Promise<string> => {
      const r = await postJson(`${router!.url}/v1/completions`, { model: 'm', prompt: 'x' });
      expect(r.status).toBe(502);
      return /\(tried (dead-\d): connection refused\)$/.exec(await r.text())![1];
    };
    // The first pod tried is ejected first, the other one a moment later: then both are.
    const first = await tried();
    await new Promise((r) => setTimeout(r, 100));
    expect(await tried()).not.toBe(first);
    for (let i = 0; i < 10; i++) expect(await tried()).toBe(first);
  });

  it('trafficPolicy.retry.attempts 0: a pod that cannot be reached is not left for another, and the 502 names it', async () => {
    const [p1, p2] = [await unusedPort(), await unusedPort()];
    router = await startRouter(resources([{ name: 'dead-1', port: p1 }, { name: 'dead-2', port: p2 }], '  trafficPolicy: { retry: { attempts: 0 } }\n'), { workers: 1 });
    for (let i = 0; i < 3; i++) {
      const r = await postJson(`${router.url}/v1/completions`, { model: 'm', prompt: 'x' });
      expect(r.status).toBe(502);
      expect(await r.text()).toMatch(/cannot connect to any pod of ModelServer default\/sched-server \(tried dead-\d: connection refused\)$/);
    }
  });

  it('trafficPolicy.retry.retryInterval: the next pod is tried only after the interval', async () => {
    const [p1, p2] = [await unusedPort(), await unusedPort()];
    router = await startRouter(resources([{ name: 'dead-1', port: p1 }, { name: 'dead-2', port: p2 }], '  trafficPolicy: { retry: { attempts: 1, retryInterval: 400ms } }\n'), { workers: 1 });
    const t0 = performance.now();
    const r = await postJson(`${router.url}/v1/completions`, { model: 'm', prompt: 'x' });
    const elapsed = performance.now() - t0;
    expect(r.status).toBe(502);
    // Both pods, one after the other: the second attempt waited for the interval.
    expect(await r.text()).toMatch(/cannot connect to any pod of ModelServer default\/sched-server \(tried dead-(1: connection refused, dead-2|2: connection refused, dead-1): connection refused\)$/);
    expect(elapsed).toBeGreaterThanOrEqual(400);
    expect(await metric(router, 'inference_router_upstream_retries_total', 'server="default/sched-server"')).toBe(1);
  });

  it('a client that leaves during the retry interval: no further pod is tried, and the request is logged 499 once', async () => {
    const [p1, p2] = [await unusedPort(), await unusedPort()];
    const logged = await startLoggedRouter(resources([{ name: 'dead-1', port: p1 }, { name: 'dead-2', port: p2 }], '  trafficPolicy: { retry: { attempts: 1, retryInterval: 800ms } }\n'));
    router = logged;
    const ac = new AbortController();
    const sent = fetch(`${router.url}/v1/completions`, {
      method: 'POST', signal: ac.signal, headers: { 'content-type': 'application/json', 'x-request-id': 'left-in-interval' }, body: JSON.stringify({ model: 'm', prompt: 'x' }),
    });
    // The first pod refuses at once; the retry then waits 800 ms. Leave within it.
    await waitFor('the retry to be counted', async () => (await metric(router!, 'inference_router_upstream_retries_total', 'server="default/sched-server"')) === 1, 5000);
    ac.abort();
    await sent.catch(() => undefined);
    const records = (): { request_id: string; status_code: number; selected_pod: string; error?: { type: string } }[] => accessLogRecords(logged.logFile);
    await waitFor('the record', () => records().length >= 1, 5000);
    // After the interval: the second pod was not tried (selected_pod stays the first) and the
    // request was recorded once.
    await new Promise((r) => setTimeout(r, 1000));
    const recs = records();
    expect(recs).toHaveLength(1);
    expect(recs[0].request_id).toBe('left-in-interval');
    expect(recs[0].status_code).toBe(499);
    expect(recs[0].error?.type).toBe('client_closed');
    expect(recs[0].selected_pod).toMatch(/^dead-[12]$/);
    // The pod recorded is the one whose connection failed: a second attempt, made after the
    // client left, would have been recorded instead (its failure counts as the client's leaving).
    expect(await metric(router, 'inference_router_upstream_connect_failures_total', `backend_pod="${recs[0].selected_pod}",pod="${recs[0].selected_pod}"`)).toBe(1);
    expect(await metric(router, 'inference_router_upstream_retries_total', 'server="default/sched-server"')).toBe(1);
  });

  it('trafficPolicy.retry: a pod that times out before answering is left for another pod', async () => {
    const slow = await startMock('pod-slow', ['--latency-ms', '3000']);
    const fast = await startMock('pod-fast');
    mocks.push(slow, fast);
    const pods = [{ name: 'pod-slow', port: slow.port }, { name: 'pod-fast', port: fast.port }];
    router = await startRouter(resources(pods, '  trafficPolicy: { timeout: 300ms, retry: { attempts: 1 } }\n'), {
      workers: 1,
      env: { ROUTER_OUTLIER_CONSECUTIVE_FAILURES: '1000' },
    });
    for (let i = 0; i < 6; i++) expect(await complete(router)).toBe(200);
    expect((await fast.stats()).requests).toBe(6);
    expect(await metric(router, 'inference_router_upstream_timeouts_total', 'backend_pod="pod-slow",pod="pod-slow"')).toBe((await slow.stats()).requests);
  });

  it('without engine metrics, the latency each pod showed steers traffic to the faster pod', async () => {
    const slow = await startMock('pod-slow', ['--latency-ms', '80']);
    const fast = await startMock('pod-fast');
    mocks.push(slow, fast);
    const pods = [{ name: 'pod-slow', port: slow.port }, { name: 'pod-fast', port: fast.port }];
    router = await startRouter(resources(pods), { workers: 1 });
    for (let i = 0; i < 30; i++) expect(await complete(router)).toBe(200);
    const slowCount = (await slow.stats()).requests;
    const fastCount = (await fast.stats()).requests;
    expect(slowCount + fastCount).toBe(30);
    expect(slowCount).toBeGreaterThan(0); // each pod was measured
    expect(fastCount).toBeGreaterThanOrEqual(3 * slowCount);
  });

  it('without a retry policy, a pod that dies while it works on a request is not "unreachable": the 502 says the connection broke, no other pod gets the request', async () => {
    const pa = await startMock('pod-a');
    const pb = await startMock('pod-b');
    mocks.push(pa, pb);
    router = await startRouter(resources([{ name: 'pod-a', port: pa.port }, { name: 'pod-b', port: pb.port }]), { workers: 1 });
    // Both pods answered once: each has a kept-alive connection, which the next request reuses.
    await waitFor('both pods used', async () => {
      expect(await complete(router!)).toBe(200);
      return (await pa.stats()).requests > 0 && (await pb.stats()).requests > 0;
    }, 10_000, 0);
    const before = [(await pa.stats()).requests, (await pb.stats()).requests];
    const pending = postJson(`${router.url}/v1/completions`, { model: 'm', prompt: 'x' }, { 'x-mock-latency-ms': '3000' });
    const busy = await waitFor('the request at a pod', async () => {
      if ((await pa.stats()).requests > before[0]) return 'a';
      if ((await pb.stats()).requests > before[1]) return 'b';
      return null;
    }, 5_000);
    const [dying, other] = busy === 'a' ? [pa, pb] : [pb, pa];
    const otherBefore = busy === 'a' ? before[1] : before[0];
    await new Promise((r) => setTimeout(r, 300));
    dying.child.kill('SIGKILL');
    const r = await pending;
    const text = await r.text();
    expect(r.status).toBe(502);
    expect(text).not.toMatch(/cannot connect/);
    expect(text).toMatch(/closed the connection|ECONNRESET/);
    expect((await other.stats()).requests).toBe(otherBefore);
    expect(await metric(router, 'inference_router_upstream_connect_failures_total', `backend_pod="pod-${busy}",pod="pod-${busy}"`)).toBe(0);
    expect(await metric(router, 'inference_router_upstream_retries_total', 'server="default/sched-server"')).toBe(0);
  });

  it('a pod that answers every request 500 at once is not taken for the fastest: it draws no more than its share', async () => {
    const failing = await startMock('pod-failing', ['--fail-rate', '1']);
    const healthy = await startMock('pod-healthy', ['--latency-ms', '150']);
    mocks.push(failing, healthy);
    router = await startRouter(resources([{ name: 'pod-failing', port: failing.port }, { name: 'pod-healthy', port: healthy.port }]), { workers: 1 });
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) statuses.push(await complete(router));
    expect(statuses.filter((s) => s === 200).length).toBe((await healthy.stats()).requests);
    // Its answers in a millisecond drew 39 of 40 requests when they counted as its latency.
    expect((await failing.stats()).requests).toBeLessThanOrEqual(30);
  });

  it('a pod that answers every request 500 is ejected after ROUTER_OUTLIER_CONSECUTIVE_5XX of them; traffic goes to the healthy one; it comes back once it answers', async () => {
    const failing = await startMock('pod-failing', ['--fail-rate', '1']);
    // Slower than the pod that comes back: the latency scorer then does not keep every request
    // (one at a time, none in flight) on the pod measured fastest so far.
    const healthy = await startMock('pod-healthy', ['--latency-ms', '20']);
    mocks.push(failing, healthy);
    router = await startRouter(resources([{ name: 'pod-failing', port: failing.port }, { name: 'pod-healthy', port: healthy.port }]), {
      workers: 1,
      env: { ROUTER_OUTLIER_CONSECUTIVE_5XX: '3', ROUTER_OUTLIER_BASE_EJECTION: '2s', ROUTER_OUTLIER_MAX_EJECTION: '2s' },
    });
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) statuses.push(await complete(router));
    const failed = (await failing.stats()).requests;
    // Three 500s eject it; a slow run may reach it once more per ejection that ended (on probation).
    expect(failed).toBeGreaterThanOrEqual(3);
    expect(failed).toBeLessThanOrEqual(5);
    expect(statuses.filter((s) => s === 500)).toHaveLength(failed);
    expect((await healthy.stats()).requests).toBe(40 - failed);
    expect(await metric(router, 'inference_router_upstream_5xx_failures_total', 'backend_pod="pod-failing",pod="pod-failing"')).toBe(failed);
    expect(await metric(router, 'inference_router_pod_ejections_total', 'backend_pod="pod-failing",pod="pod-failing"')).toBeGreaterThanOrEqual(1);
    expect(await metric(router, 'inference_router_upstream_5xx_failures_total', 'backend_pod="pod-healthy",pod="pod-healthy"')).toBe(0);
    expect(await metric(router, 'inference_router_pod_ejections_total', 'backend_pod="pod-healthy",pod="pod-healthy"')).toBe(0);
    await waitFor('ejection logged', () => /pod pod-failing ejected for 2000ms after 3 5xx answer\(s\) in a row \(ejection 1 in a row\)/.test(router!.stderr()), 10_000);

    // The pod's server is healthy again: once the ejection is over, it gets traffic again.
    expect((await fetch(`${failing.url}/fail-rate?rate=0`, { method: 'POST' })).status).toBe(200);
    await waitFor('pod-failing back in rotation', async () => {
      expect(await complete(router!)).toBe(200);
      return (await failing.stats()).requests > failed;
    }, 20_000, 50);
    await waitFor('return logged', () => router!.stderr().includes('pod pod-failing answered again: back in rotation'), 10_000);
    expect(await metric(router, 'inference_router_pod_ejected', 'backend_pod="pod-failing",pod="pod-failing"')).toBe(0);
    // Back for good: it takes its share again.
    const before = (await failing.stats()).requests;
    for (let i = 0; i < 30; i++) expect(await complete(router)).toBe(200);
    expect((await failing.stats()).requests - before).toBeGreaterThanOrEqual(5);
  });

  it('under concurrency, a pod that answers 500 at once draws (nearly) nothing once ejected, though it has the fewest requests in flight', async () => {
    const failing = await startMock('pod-failing', ['--fail-rate', '1']);
    const healthy = await startMock('pod-healthy', ['--latency-ms', '30']);
    mocks.push(failing, healthy);
    router = await startRouter(resources([{ name: 'pod-failing', port: failing.port }, { name: 'pod-healthy', port: healthy.port }]), {
      workers: 1,
      env: { ROUTER_OUTLIER_CONSECUTIVE_5XX: '3', ROUTER_OUTLIER_BASE_EJECTION: '1m' },
    });
    // 8 clients, 10 requests each.
    await Promise.all(Array.from({ length: 8 }, async () => {
      for (let i = 0; i < 10; i++) await complete(router!);
    }));
    const failed = (await failing.stats()).requests;
    expect(failed + (await healthy.stats()).requests).toBe(80);
    // The threshold, and at most the requests already sent to it when it was ejected.
    expect(failed).toBeGreaterThanOrEqual(3);
    expect(failed).toBeLessThanOrEqual(3 + 8);
    expect(await metric(router, 'inference_router_pod_ejections_total', 'backend_pod="pod-failing",pod="pod-failing"')).toBe(1);
  });

  for (const workers of [1, 2]) {
    it(`an answer to a request sent before the ejection does not end it (${workers} worker(s)): a pod failing half its requests stays out until its interval ends`, async () => {
      const healthy = await startMock('pod-healthy', ['--latency-ms', '20']);
      mocks.push(healthy);
      const flaky = await flakyPod(400);
      closers.push(flaky.close);
      router = await startRouter(resources([{ name: 'pod-healthy', port: healthy.port }, { name: 'pod-flaky', port: flaky.port }]), {
        workers,
        env: { ROUTER_OUTLIER_CONSECUTIVE_5XX: '2', ROUTER_OUTLIER_BASE_EJECTION: '1m' },
      });
      // 8 clients, 12 requests each: the flaky pod's 500s come at once, its good answers 400 ms later.
      await Promise.all(Array.from({ length: 8 }, async () => {
        for (let i = 0; i < 12; i++) await complete(router!);
      }));
      expect(flaky.requests() + (await healthy.stats()).requests).toBe(96);
      expect(await metric(router, 'inference_router_pod_ejections_total', 'backend_pod="pod-flaky",pod="pod-flaky"')).toBe(1);
      expect(router.stderr()).not.toMatch(/pod pod-flaky answered again/);
      expect(await metric(router, 'inference_router_pod_ejected', 'backend_pod="pod-flaky",pod="pod-flaky"')).toBe(workers);
      // What it drew: the requests before its second 500, and those sent in the same moment.
      expect(flaky.requests()).toBeLessThanOrEqual(4 + 8);
    });
  }

  it('a pod\'s 503 with retry-after (overloaded) does not eject it; a 503 without does', async () => {
    const pod = await startMock('pod-busy');
    mocks.push(pod);
    router = await startRouter(resources([{ name: 'pod-busy', port: pod.port }]), {
      workers: 1,
      env: { ROUTER_OUTLIER_CONSECUTIVE_5XX: '3', ROUTER_OUTLIER_BASE_EJECTION: '1m' },
    });
    const busy = async (headers: Record<string, string>): Promise<number> => {
      const r = await postJson(`${router!.url}/v1/completions`, { model: 'm', prompt: 'x' }, { 'x-mock-status': '503', ...headers });
      await r.text();
      return r.status;
    };
    for (let i = 0; i < 10; i++) expect(await busy({ 'x-mock-retry-after': '1' })).toBe(503);
    expect(await metric(router, 'inference_router_upstream_5xx_failures_total', 'backend_pod="pod-busy",pod="pod-busy"')).toBe(0);
    expect(await metric(router, 'inference_router_pod_ejected', 'backend_pod="pod-busy",pod="pod-busy"')).toBe(0);
    for (let i = 0; i < 3; i++) expect(await busy({})).toBe(503);
    expect(await metric(router, 'inference_router_upstream_5xx_failures_total', 'backend_pod="pod-busy",pod="pod-busy"')).toBe(3);
    expect(await metric(router, 'inference_router_pod_ejected', 'backend_pod="pod-busy",pod="pod-busy"')).toBe(1);
    expect(await metric(router, 'inference_router_pod_ejections_total', 'backend_pod="pod-busy",pod="pod-busy"')).toBe(1);
  });

  for (const mode of ['drop', 'reset'] as const) {
    it(`a pod that takes each request and then closes the connection before answering (${mode}) is ejected after ROUTER_OUTLIER_CONSECUTIVE_FAILURES of them`, async () => {
      const healthy = await startMock('pod-healthy');
      mocks.push(healthy);
      const crashed = await brokenPod(mode);
      closers.push(crashed.close);
      router = await startRouter(resources([{ name: 'pod-healthy', port: healthy.port }, { name: 'pod-crashed', port: crashed.port }]), {
        workers: 1,
        env: { ROUTER_OUTLIER_CONSECUTIVE_FAILURES: '2', ROUTER_OUTLIER_BASE_EJECTION: '1m' },
      });
      const statuses: number[] = [];
      for (let i = 0; i < 30; i++) statuses.push(await complete(router));
      // Each of its requests is answered 502 (no retry policy: the pod may have worked on it).
      expect(statuses.filter((s) => s === 502)).toHaveLength(crashed.requests());
      expect(crashed.requests()).toBe(2);
      expect((await healthy.stats()).requests).toBe(28);
      expect(await metric(router, 'inference_router_upstream_resets_total', 'backend_pod="pod-crashed",pod="pod-crashed"')).toBe(2);
      expect(await metric(router, 'inference_router_upstream_connect_failures_total', 'backend_pod="pod-crashed",pod="pod-crashed"')).toBe(0);
      expect(await metric(router, 'inference_router_pod_ejections_total', 'backend_pod="pod-crashed",pod="pod-crashed"')).toBe(1);
      await waitFor('ejection logged', () => /pod pod-crashed ejected for 60000ms after 2 connect failure\(s\)\/timeout\(s\)\/reset\(s\) in a row/.test(router!.stderr()), 10_000);
    });
  }

  it('an idle connection the pod closes just as the next request arrives is no failure: the request is sent again, nothing counts', async () => {
    const pod = await brokenPod('idle-race');
    closers.push(pod.close);
    // The window wide: on a loaded machine the worker can see the close more than the default 20 ms after the send.
    router = await startRouter(resources([{ name: 'pod-racing', port: pod.port }]), {
      workers: 1,
      env: { ROUTER_OUTLIER_CONSECUTIVE_FAILURES: '1', ROUTER_OUTLIER_BASE_EJECTION: '1m', ROUTER_UPSTREAM_IDLE_RACE: '5s' },
    });
    for (let i = 0; i < 6; i++) expect(await complete(router)).toBe(200);
    // Each connection served one request and was closed by the pod as the next one arrived.
    expect(pod.requests()).toBe(11);
    expect(await metric(router, 'inference_router_upstream_resets_total', 'backend_pod="pod-racing",pod="pod-racing"')).toBe(0);
    expect(await metric(router, 'inference_router_upstream_connect_failures_total', 'backend_pod="pod-racing",pod="pod-racing"')).toBe(0);
    expect(await metric(router, 'inference_router_pod_ejections_total', 'backend_pod="pod-racing",pod="pod-racing"')).toBe(0);
  });

  it('with ROUTER_UPSTREAM_IDLE_RACE=0 no break is taken for the idle-close race: the request is answered 502, not sent again', async () => {
    const pod = await brokenPod('idle-race');
    closers.push(pod.close);
    router = await startRouter(resources([{ name: 'pod-racing', port: pod.port }]), {
      workers: 1,
      env: { ROUTER_UPSTREAM_IDLE_RACE: '0' },
    });
    expect(await complete(router)).toBe(200);
    expect(await complete(router)).toBe(502);
    expect(pod.requests()).toBe(2);
    expect(await metric(router, 'inference_router_upstream_resets_total', 'backend_pod="pod-racing",pod="pod-racing"')).toBe(1);
  });

  for (const mode of ['cut-stream', 'cut-whole'] as const) {
    it(`a pod that cuts its 200 answers partway (${mode}) is ejected: a cut answer is a failure, not an answer`, async () => {
      const healthy = await startMock('pod-healthy');
      mocks.push(healthy);
      const cutting = await brokenPod(mode);
      closers.push(cutting.close);
      router = await startRouter(resources([{ name: 'pod-healthy', port: healthy.port }, { name: 'pod-cutting', port: cutting.port }]), {
        workers: 1,
        env: { ROUTER_OUTLIER_CONSECUTIVE_FAILURES: '2', ROUTER_OUTLIER_BASE_EJECTION: '1m' },
      });
      let broken = 0;
      for (let i = 0; i < 30; i++) {
        const stream = mode === 'cut-stream';
        try {
          const r = await postJson(`${router.url}/v1/completions`, { model: 'm', prompt: 'x', stream });
          const text = await r.text();
          if (r.status !== 200 || (stream && !text.includes('[DONE]'))) broken++;
        } catch {
          broken++; // the router cut the client's connection mid-answer
        }
      }
      expect(broken).toBe(cutting.requests());
      expect(cutting.requests()).toBe(2);
      expect(await metric(router, 'inference_router_upstream_resets_total', 'backend_pod="pod-cutting",pod="pod-cutting"')).toBe(2);
      expect(await metric(router, 'inference_router_pod_ejections_total', 'backend_pod="pod-cutting",pod="pod-cutting"')).toBe(1);
    });
  }

  it('without a retry policy a timeout is answered (504), not retried', async () => {
    const slow = await startMock('pod-slow', ['--latency-ms', '3000']);
    mocks.push(slow);
    router = await startRouter(resources([{ name: 'pod-slow', port: slow.port }], '  trafficPolicy: { timeout: 300ms }\n'), { workers: 1 });
    expect(await complete(router)).toBe(504);
    expect(await metric(router, 'inference_router_upstream_retries_total', 'server="default/sched-server"')).toBe(0);
  });
});

describe('scheduling on pod metrics, real processes', () => {
  let router: Router | undefined;
  const mocks: MockBackend[] = [];
  afterEach(async () => {
    await router?.kill();
    await Promise.all(mocks.splice(0).map((m) => m.kill()));
  });

  async function start(pods: [string, string[]][], env: Record<string, string> = {}): Promise<MockBackend[]> {
    const started = await Promise.all(pods.map(([name, args]) => startMock(name, ['--metrics-engine', 'vllm', ...args])));
    mocks.push(...started);
    router = await startRouter(resources(started.map((m, i) => ({ name: pods[i][0], port: m.port })), '', 'vLLM'), {
      workers: 2, env: { ROUTER_POD_METRICS_INTERVAL: '100ms', ...env },
    });
    // Both workers hold fresh values of every pod before traffic starts.
    for (const [name] of pods) {
      await waitFor(`scraped metrics of ${name}`, async () => (await metric(router!, 'inference_router_pod_metrics_fresh', `backend_pod="${name}",pod="${name}"`)) === 2);
    }
    return started;
  }

  const send = async (n: number, prompt: (i: number) => string = () => 'x'): Promise<void> => {
    for (let i = 0; i < n; i++) {
      const r = await postJson(`${router!.url}/v1/completions`, { model: 'm', prompt: prompt(i) });
      expect(r.status).toBe(200);
      await r.text();
    }
  };

  it('a pod whose metrics go stale reads 0 in pod_metrics_fresh (the series stays, so an alert on 0 fires)', async () => {
    const [gone] = await start([['pod-gone', []], ['pod-stays', []]]);
    await gone.kill();
    const line = (text: string, pod: string) => text.split('\n').find((l) => l.startsWith(`inference_router_pod_metrics_fresh{backend_pod="${pod}",pod="${pod}"}`));
    await waitFor('pod-gone read stale', async () => line(await (await fetch(`${router!.url}/metrics`)).text(), 'pod-gone')?.endsWith(' 0'), 10_000);
    expect(line(await (await fetch(`${router!.url}/metrics`)).text(), 'pod-stays')).toMatch(/ 2$/);
  });

  it('a pod with a long waiting queue gets no traffic while another is below the threshold', async () => {
    const [busy, idle] = await start([['pod-busy', ['--metrics-waiting', '500']], ['pod-idle', []]]);
    await send(30);
    expect((await busy.stats()).requests).toBe(0);
    expect((await idle.stats()).requests).toBe(30);
    expect(await metric(router!, 'inference_router_scheduler_decisions_total', 'scorer="single"')).toBe(30);
  });

  it('a pod whose KV cache is full gets less traffic (kv-cache scorer)', async () => {
    const dir = tempDir();
    const file = join(dir, 'scheduler.yaml');
    writeFile(file, 'scorers: { least-request: 1, kv-cache: 1 }\n');
    const [full, empty] = await start([['pod-full', ['--metrics-kv', '1']], ['pod-empty', ['--metrics-kv', '0.05']]], { ROUTER_SCHEDULER_CONFIG: file });
    await send(30);
    const [f, e] = [(await full.stats()).requests, (await empty.stats()).requests];
    expect(f + e).toBe(30);
    expect(e).toBeGreaterThan(f);
    expect(await metric(router!, 'inference_router_scheduler_decisions_total', 'scorer="kv-cache"')).toBeGreaterThan(0);
  });

  it('requests sharing a long prefix go to the same pod; requests that share none spread', async () => {
    const pods = await start([['pod-1', []], ['pod-2', []], ['pod-3', []]]);
    const system = 'You are a careful assistant who answers in French. '.repeat(60);
    await send(12, (i) => `${system}Question ${i}?`);
    const counts = await Promise.all(pods.map(async (p) => (await p.stats()).requests));
    // Two workers: until the first pairs travelled between them, at most two pods for one prefix.
    expect(counts.filter((c) => c > 0).length).toBeLessThanOrEqual(2);
    expect(Math.max(...counts)).toBeGreaterThanOrEqual(6);
    await Promise.all(pods.map((p) => fetch(`${p.url}/stats/reset`, { method: 'POST' })));
    // Concurrent (the pods answer in 300 ms): without a shared prefix, load spreads them.
    await Promise.all(Array.from({ length: 30 }, async (_, i) => {
      const r = await postJson(`${router!.url}/v1/completions`, { model: 'm', prompt: `${String(i).repeat(600)} unrelated ${i}` }, { 'x-mock-latency-ms': '300' });
      expect(r.status).toBe(200);
      await r.text();
    }));
    const spread = await Promise.all(pods.map(async (p) => (await p.stats()).requests));

    expect(spread.filter((c) => c > 0).length).toBe(3);
  });
});
