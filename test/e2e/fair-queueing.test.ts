import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accessLogRecords, postJson, resourcesFor, startLoggedRouter, startMock, tempDir, waitFor, writeFile, type MockBackend, type Router } from '../helpers/processes.js';
import { sample } from '../helpers/metrics-text.js';
import { sha256Hex } from '../unit/auth/jwks-server.js';

/**
 * Fair queueing over the built router (one worker, one place in flight to the ModelServer): a
 * tenant that sent little goes before another tenant's requests that waited longer; a waiting
 * request that times out, finds the queue full, or whose client leaves.
 */

function key(name: string): string {
  return `  - name: ${name}\n    sha256: "${sha256Hex(`sk-${name}-0123456789`)}"\n`;
}

function bearer(name: string, extra: Record<string, string> = {}): Record<string, string> {
  return { authorization: `Bearer sk-${name}-0123456789`, ...extra };
}

const BODY = { model: 'sf-model', prompt: 'San Francisco is a' };

async function start(mock: MockBackend, env: Record<string, string>): Promise<{ router: Router; log: string }> {
  const dir = tempDir();
  const auth = join(dir, 'auth.yaml');
  writeFile(auth, `apiKeys:\n${key('heavy')}${key('light')}`);
  const router = await startLoggedRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), {
    dir,
    env: { ROUTER_AUTH_CONFIG: auth, ROUTER_FAIRNESS_MAX_CONCURRENT: '1', ...env },
  });
  return { router, log: router.logFile };
}

async function metric(router: Router, series: string): Promise<number> {
  return sample(await (await fetch(`${router.url}/metrics`)).text(), series) ?? 0;
}

describe('fair queueing (built router)', () => {
  let mock: MockBackend;
  beforeAll(async () => {
    mock = await startMock('pod-a');
  });
  afterAll(async () => {
    await mock?.kill();
  });

  describe('order and a client that leaves', () => {
    let router: Router;
    let log: string;
    beforeAll(async () => {
      ({ router, log } = await start(mock, {}));
    }, 60_000);
    afterAll(async () => {
      await router?.kill();
    });

    it('a light tenant\'s request goes before a heavy tenant\'s that waited longer', async () => {
      const done: string[] = [];
      // heavy-0 holds the place long enough for the others to queue behind it, however slow the machine.
      const send = (tenant: string, id: string): Promise<number> =>
        postJson(`${router.url}/v1/completions`, BODY, bearer(tenant, { 'x-request-id': id, 'x-mock-latency-ms': id === 'heavy-0' ? '3000' : '100' }))
          .then(async (r) => { await r.text(); done.push(id); return r.status; });
      // One at a time, so that they arrive in this order: heavy-0 goes, the others wait.
      const heavy: Promise<number>[] = [];
      for (let i = 0; i < 4; i++) {
        heavy.push(send('heavy', `heavy-${i}`));
        if (i === 0) await waitFor('heavy-0 in flight', async () => (await metric(router, 'inference_router_upstream_inflight_requests{backend_pod="pod-a",pod="pod-a"}')) === 1);
        else await waitFor(`${i} heavy requests waiting`, async () => (await metric(router, 'inference_router_fair_queue_requests{server="default/sf-server"}')) === i);
      }
      const light = send('light', 'light-0');
      expect(await Promise.all([...heavy, light])).toEqual([200, 200, 200, 200, 200]);
      // heavy-0 held the place; light-0 came last but had used nothing.
      expect(done[0]).toBe('heavy-0');
      expect(done[1]).toBe('light-0');
      expect(done.slice(2)).toEqual(['heavy-1', 'heavy-2', 'heavy-3']);
      const records = accessLogRecords(log);
      const lightRecord = records.find((r) => r.request_id === 'light-0');
      expect(lightRecord.status_code).toBe(200);
      expect(lightRecord.selected_pod).toBe('pod-a');
      expect(await metric(router, 'inference_router_fair_queue_wait_seconds_count{server="default/sf-server"}')).toBe(4);
      expect(await metric(router, 'inference_router_fair_queue_requests{server="default/sf-server"}')).toBe(0);
    });

    it('a client that leaves while its request waits takes it out of the queue: recorded 499, the next goes without it', async () => {
      const first = postJson(`${router.url}/v1/completions`, BODY, bearer('heavy', { 'x-request-id': 'hold', 'x-mock-latency-ms': '3000' }));
      await waitFor('the first in flight', async () => (await metric(router, 'inference_router_upstream_inflight_requests{backend_pod="pod-a",pod="pod-a"}')) === 1);
      const leaving = new AbortController();
      const gone = postJson(`${router.url}/v1/completions`, BODY, bearer('light', { 'x-request-id': 'gone' }));
      void gone.catch(() => undefined);
      const aborted = fetch(`${router.url}/v1/completions`, {
        method: 'POST', body: JSON.stringify(BODY), signal: leaving.signal,
        headers: { 'content-type': 'application/json', ...bearer('light', { 'x-request-id': 'left' }) },
      }).catch((e: Error) => e.name);
      await waitFor('two waiting', async () => (await metric(router, 'inference_router_fair_queue_requests{server="default/sf-server"}')) === 2);
      leaving.abort();
      expect(await aborted).toBe('AbortError');
      await waitFor('the one that left out of the queue', async () => (await metric(router, 'inference_router_fair_queue_requests{server="default/sf-server"}')) === 1);
      expect((await (await first).text()).length).toBeGreaterThan(0);
      expect((await gone).status).toBe(200);
      const left = await waitFor('its record', () => accessLogRecords(log).find((r) => r.request_id === 'left'));
      expect(left.status_code).toBe(499);
      expect(left.selected_pod ?? '').toBe('');
    });
  });

  describe('bounds', () => {
    let router: Router;
    let log: string;
    beforeAll(async () => {
      ({ router, log } = await start(mock, { ROUTER_FAIRNESS_QUEUE_TIMEOUT: '1500ms', ROUTER_FAIRNESS_MAX_QUEUED: '1' }));
    }, 60_000);
    afterAll(async () => {
      await router?.kill();
    });

    it('a request that waits too long gets 503 fair_queue_timeout, one beyond the queue\'s bound 503 fair_queue_full; both retry-after 1', async () => {
      const slow = postJson(`${router.url}/v1/completions`, BODY, bearer('heavy', { 'x-request-id': 'slow', 'x-mock-latency-ms': '5000' }));
      await waitFor('the first in flight', async () => (await metric(router, 'inference_router_upstream_inflight_requests{backend_pod="pod-a",pod="pod-a"}')) === 1);
      const waits = postJson(`${router.url}/v1/completions`, BODY, bearer('light', { 'x-request-id': 'waits', accept: 'application/json' }));
      await waitFor('one waiting', async () => (await metric(router, 'inference_router_fair_queue_requests{server="default/sf-server"}')) === 1);
      const full = await postJson(`${router.url}/v1/completions`, BODY, bearer('light', { 'x-request-id': 'full', accept: 'application/json' }));
      expect(full.status).toBe(503);
      expect(full.headers.get('retry-after')).toBe('1');
      expect(((await full.json()) as any).error.code).toBe('fair_queue_full');
      const timedOut = await waits;
      expect(timedOut.status).toBe(503);
      expect(timedOut.headers.get('retry-after')).toBe('1');
      const body = (await timedOut.json()) as any;
      expect(body.error.code).toBe('fair_queue_timeout');
      expect(body.error.message).toContain('default/sf-server');
      expect((await slow).status).toBe(200);
      const records = accessLogRecords(log);
      for (const id of ['waits', 'full']) {
        const r = records.find((x) => x.request_id === id);
        expect(r.status_code).toBe(503);
        expect(r.selected_pod ?? '').toBe('');
      }
    });
  });
});

describe('fair queueing and a drain (built router)', () => {
  let mock: MockBackend;
  beforeAll(async () => {
    mock = await startMock('pod-a');
  });
  afterAll(async () => {
    await mock?.kill();
  });

  it('a request still waiting when ROUTER_DRAIN_TIMEOUT passes is answered 503 router_stopping and recorded; the router exits', async () => {
    const { router, log } = await start(mock, { ROUTER_DRAIN_TIMEOUT: '1500ms' });
    try {
      const long = postJson(`${router.url}/v1/completions`, BODY, bearer('heavy', { 'x-request-id': 'long', 'x-mock-latency-ms': '10000' })).catch(() => null);
      await waitFor('the first in flight', async () => (await metric(router, 'inference_router_upstream_inflight_requests{backend_pod="pod-a",pod="pod-a"}')) === 1);
      const waiting = postJson(`${router.url}/v1/completions`, BODY, bearer('light', { 'x-request-id': 'waiting', accept: 'application/json' }));
      await waitFor('one waiting', async () => (await metric(router, 'inference_router_fair_queue_requests{server="default/sf-server"}')) === 1);
      router.child.kill('SIGTERM');
      const answer = await waiting;
      expect(answer.status).toBe(503);
      expect(((await answer.json()) as any).error.code).toBe('router_stopping');
      await long;
      expect(await router.exited).toBe(0);
      const record = accessLogRecords(log).find((r) => r.request_id === 'waiting');
      expect(record.status_code).toBe(503);
      expect(record.error.message).toContain('fair queue');
      expect(record.selected_pod ?? '').toBe('');
    } finally {
      await router.kill();
    }
  });
});
