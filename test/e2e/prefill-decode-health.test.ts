/**
 * Prefill/decode pairs and passive health, load and overload (built router, 1 worker, mock vLLM
 * pods): a group whose prefill pod is ejected is passed over for a healthy group; a prefill pod's
 * 503 with retry-after is the overloaded pod's answer (passed through, not counted against it);
 * a decode pod counts the requests whose prefill runs as in flight, so a burst spreads.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'node:http';
import { postJson, startRouter, startMock, unusedPort, waitFor, type MockBackend, type Router } from '../helpers/processes.js';
import { sample } from '../helpers/metrics-text.js';
import { KTHENA_LABELS, pdResources } from '../helpers/pd-resources.js';

describe('prefill/decode pairs under passive health and load', () => {
  let pods: Record<string, MockBackend>;
  let router: Router;
  beforeAll(async () => {
    const roles: Record<string, string> = {
      'p-a': 'prefill', 'd-a': 'decode', 'p-bad': 'prefill', 'd-z': 'decode', 'p-1': 'prefill', 'd-1': 'decode', 'p-2': 'prefill', 'd-2': 'decode',
      'p-o': 'prefill', 'd-o': 'decode', 'p-w': 'prefill', 'd-w': 'decode', 'd-y': 'decode',
    };
    const names = Object.keys(roles);
    const started = await Promise.all(names.map((n) => startMock(n, ['--pd-role', roles[n], ...(n === 'p-bad' ? ['--fail-rate', '1'] : [])])));
    pods = Object.fromEntries(names.map((n, i) => [n, started[i]]));
    const pod = (name: string, group: string) => ({ name, port: pods[name].port, group, role: roles[name] });
    const dead = await unusedPort();
    router = await startRouter(
      pdResources('eject-server', 'eject-model', { engine: 'vLLM', connector: 'nixl', ...KTHENA_LABELS }, [pod('p-a', 'a'), pod('d-a', 'a'), pod('p-bad', 'z'), pod('d-z', 'z')])
      + pdResources('burst-server', 'burst-model', { engine: 'vLLM', connector: 'nixl', ...KTHENA_LABELS }, [pod('p-1', 'g1'), pod('d-1', 'g1'), pod('p-2', 'g2'), pod('d-2', 'g2')])
      + pdResources('busy-server', 'busy-model', { engine: 'vLLM', connector: 'nixl', ...KTHENA_LABELS }, [pod('p-o', 'o'), pod('d-o', 'o')])
      // A group whose prefill pod refuses connections, and a 40 s retry interval.
      + pdResources('wait-server', 'wait-model', { engine: 'vLLM', connector: 'nixl', ...KTHENA_LABELS },
        [pod('p-w', 'w'), pod('d-w', 'w'), { name: 'p-dead', port: dead, group: 'y', role: 'prefill' }, pod('d-y', 'y')],
        '  trafficPolicy: { retry: { attempts: 1, retryInterval: 40s } }\n'),
      { workers: 1, env: { ROUTER_OUTLIER_CONSECUTIVE_5XX: '2', ROUTER_OUTLIER_BASE_EJECTION: '5m' } },
    );
  });
  afterAll(async () => {
    await router?.kill();
    await Promise.all(Object.values(pods ?? {}).map((p) => p.kill()));
  });

  it('a group whose prefill pod is ejected is passed over: every later request goes to the healthy group', async () => {
    // Until the failing prefill pod has had 2 requests (each answered 502), it is picked about half the time.
    for (let i = 0; i < 60 && (await pods['p-bad'].stats()).requests < 2; i++) await (await postJson(`${router.url}/v1/completions`, { model: 'eject-model', prompt: 'x' })).text();
    expect((await pods['p-bad'].stats()).requests).toBe(2);
    const text = await (await fetch(`${router.url}/metrics`)).text();
    expect(sample(text, 'inference_router_pod_ejections_total{backend_pod="p-bad",pod="p-bad"}')).toBe(1);
    for (let i = 0; i < 16; i++) {
      const r = await postJson(`${router.url}/v1/completions`, { model: 'eject-model', prompt: 'x' });
      expect(r.status).toBe(200);
      expect(r.headers.get('x-mock-pod')).toBe('d-a');
      await r.text();
    }
    expect((await pods['p-bad'].stats()).requests).toBe(2);
    expect((await pods['d-z'].stats()).requests).toBe(0);
  });

  it('a prefill pod\'s 503 with retry-after is passed through to the client and not counted against the pod', async () => {
    for (let i = 0; i < 5; i++) {
      const r = await postJson(`${router.url}/v1/completions`, { model: 'busy-model', prompt: 'x' }, { 'x-mock-status': '503', 'x-mock-retry-after': '1' });
      expect(r.status).toBe(503);
      expect(r.headers.get('retry-after')).toBe('1');
      expect(r.headers.get('x-mock-pod')).toBe('p-o');
      await r.text();
    }
    const text = await (await fetch(`${router.url}/metrics`)).text();
    expect(sample(text, 'inference_router_upstream_5xx_failures_total{backend_pod="p-o",pod="p-o"}') ?? 0).toBe(0);
    expect(sample(text, 'inference_router_pod_ejections_total{backend_pod="p-o",pod="p-o"}') ?? 0).toBe(0);
    expect((await pods['d-o'].stats()).requests).toBe(0);
    const ok = await postJson(`${router.url}/v1/completions`, { model: 'busy-model', prompt: 'x' });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('x-mock-pod')).toBe('d-o');
  });

  it('a burst whose prefills take a while spreads over the decode pods (each counts the requests whose prefill runs)', async () => {
    for (let round = 0; round < 3; round++) {
      const answers = await Promise.all(Array.from({ length: 6 }, (_, i) =>
        postJson(`${router.url}/v1/completions`, { model: 'burst-model', prompt: `burst ${round} ${i}` }, { 'x-mock-latency-ms': '300' })
          .then(async (r) => { await r.text(); return r.headers.get('x-mock-pod'); })));
      const onOne = answers.filter((p) => p === 'd-1').length;
      expect(answers.filter((p) => p === 'd-1' || p === 'd-2')).toHaveLength(6);
      expect(onOne, `round ${round}: ${answers.join(' ')}`).toBe(3);
    }
  });

  it('a client that leaves while its request waits out the retryInterval is recorded at once (499), no pair tried after', async () => {
    const metric = async (name: string, labels: string) => sample(await (await fetch(`${router.url}/metrics`)).text(), `${name}{${labels}}`) ?? 0;
    for (let i = 0; i < 20; i++) {
      const req = request(`${router.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' } });
      let answered = false;
      req.on('response', (res) => { answered = true; res.resume(); });
      req.on('error', () => {});
      req.end(JSON.stringify({ model: 'wait-model', prompt: 'x' }));
      const state = await waitFor('an answer or a retry', async () => (answered ? 'answered'
        : await metric('inference_router_upstream_retries_total', 'server="default/wait-server"') === 1 ? 'waiting' : null), 10_000);
      if (state === 'answered') continue;
      const served = (await pods['p-w'].stats()).requests;
      req.destroy();
      // Recorded at once, long before the 40 s interval ends.
      await waitFor('the 499 counted', async () => await metric('inference_router_requests_total', 'model="wait-model",route="default/wait-server-route",status="499",error_type="client_closed"') === 1, 10_000);
      expect((await pods['p-w'].stats()).requests).toBe(served);
      return;
    }
    throw new Error('the group of the dead prefill pod was never picked');
  }, 60_000);
});
