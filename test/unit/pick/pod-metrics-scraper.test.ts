import { afterEach, describe, expect, it } from 'vitest';
import { PodMetricsScraper, SCRAPES_IN_FLIGHT } from '../../../src/pick/pod-metrics-scraper.js';
import { PodLoadReceiver } from '../../../src/pick/pod-load-share.js';
import { EndpointRegistry } from '../../../src/upstream/endpoint-registry.js';
import type { Endpoint, ModelServer } from '../../../src/config/resource-types.js';
import { startMockBackend, type MockBackend } from '../../mock-backend/mock-server.js';
import { DEFAULT_MOCK_OPTIONS } from '../../mock-backend/mock-options.js';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

function server(engine: string | null, endpoints: Endpoint[]): ModelServer & { endpoints: Endpoint[] } {
  return {
    kind: 'ModelServer', namespace: 'default', name: 's', key: 'default/s', model: null, inferenceEngine: engine,
    workloadSelector: null, workloadPort: null, timeoutMs: null, retry: null, endpoints,
  };
}

describe('PodMetricsScraper against mock pods serving /metrics', () => {
  const mocks: MockBackend[] = [];
  afterEach(() => { for (const m of mocks.splice(0)) m.close(); });

  it('reads vLLM and SGLang series by inferenceEngine; engines it does not know are not scraped', async () => {
    const v = await startMockBackend({ ...DEFAULT_MOCK_OPTIONS, name: 'v', metricsEngine: 'vllm', metricsWaiting: 12, metricsKv: 0.75, metricsTtftMs: 200 });
    const g = await startMockBackend({ ...DEFAULT_MOCK_OPTIONS, name: 'g', metricsEngine: 'sglang', metricsWaiting: 3, metricsKv: 0.25 });
    mocks.push(v, g);
    let now = 10_000;
    const scraper = new PodMetricsScraper({ intervalMs: 1000, clock: () => now, log: () => undefined });
    scraper.setTargets([
      server('vLLM', [{ name: 'v', host: '127.0.0.1', port: v.port }]),
      server('SGLang', [{ name: 'g', host: '127.0.0.1', port: g.port }]),
      server('TensorRT', [{ name: 't', host: '127.0.0.1', port: v.port }]),
    ]);
    // Two answers so the TTFT histogram has a count.
    for (let i = 0; i < 2; i++) await (await fetch(`${v.url}/v1/completions`, { method: 'POST', body: '{"prompt":"x"}' })).text();
    await scraper.scrapeAll();
    const rows = new Map(scraper.rows().map((r) => [r[0].split('\u0000')[0], r.slice(1)]));
    expect([...rows.keys()].sort()).toEqual(['g', 'v']);
    expect(rows.get('v')).toEqual([12, 0, 0.75, 200, null]);
    expect(rows.get('g')).toEqual([3, 0, 0.25, null, null]);
    // Stale: values not renewed are kept for 3 intervals, then unknown.
    now += 2_000;
    expect(scraper.rows()).toHaveLength(2);
    now += 1_500;
    expect(scraper.rows()).toHaveLength(0);
  });

  it('a pod running two engines (vLLM data parallel): queues add up, the KV-cache use is their mean', async () => {
    const text = `# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 3
vllm:num_requests_waiting{engine="1",model_name="m"} 4
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.3
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.4
`;
    const pod = createServer((_req, res) => res.end(text));
    await new Promise<void>((r) => pod.listen(0, '127.0.0.1', r));
    try {
      const scraper = new PodMetricsScraper({ intervalMs: 1000, clock: () => 0, log: () => undefined });
      scraper.setTargets([server('vLLM', [{ name: 'dp', host: '127.0.0.1', port: (pod.address() as AddressInfo).port }])]);
      await scraper.scrapeAll();
      const [row] = scraper.rows();
      expect(row[1]).toBe(7);
      expect(row[3]).toBeCloseTo(0.35, 10);
    } finally {
      pod.closeAllConnections();
      await new Promise((r) => pod.close(r));
    }
  });

  it('scrapes a large fleet SCRAPES_IN_FLIGHT pods at a time, every pod once a round', async () => {
    let inFlight = 0;
    let most = 0;
    const asked: string[] = [];
    const scraper = new PodMetricsScraper({
      intervalMs: 1000, clock: () => 0, log: () => undefined,
      fetchText: async (url) => {
        asked.push(url);
        most = Math.max(most, ++inFlight);
        await new Promise((r) => setTimeout(r, 1));
        inFlight--;
        return 'vllm:num_requests_waiting 1\n';
      },
    });
    const pods = Array.from({ length: 1000 }, (_, i) => ({ name: `p${i}`, host: '10.0.0.1', port: 10_000 + i }));
    scraper.setTargets([server('vLLM', pods)]);
    await scraper.scrapeAll();
    expect(most).toBe(SCRAPES_IN_FLIGHT);
    expect(new Set(asked).size).toBe(1000);
    expect(asked).toHaveLength(1000);
    expect(scraper.rows()).toHaveLength(1000);
    // A fleet over 16 x 64 pods: a sixteenth of it at a time.
    const fleet = Array.from({ length: 3200 }, (_, i) => ({ name: `q${i}`, host: '10.0.0.2', port: 10_000 + i }));
    scraper.setTargets([server('vLLM', fleet)]);
    most = 0;
    await scraper.scrapeAll();
    expect(most).toBe(200);
  });

  it('a pod answering something that is not Prometheus text keeps no values', async () => {
    const texts = ['vllm:num_requests_waiting 4\n', '<html>oops</html>'];
    let now = 0;
    const logs: string[] = [];
    const scraper = new PodMetricsScraper({ intervalMs: 1000, clock: () => now, log: (level, m) => logs.push(`${level} ${m}`), fetchText: async () => texts.shift()! });
    scraper.setTargets([server('vllm', [{ name: 'p', host: '10.0.0.1', port: 8000 }])]);
    await scraper.scrapeAll();
    expect(scraper.rows()[0].slice(1, 2)).toEqual([4]);
    expect(scraper.staleKeys()).toEqual([]);
    now = 5_000;
    await scraper.scrapeAll();
    expect(scraper.rows()).toEqual([]);
    expect(scraper.staleKeys()).toEqual(['p\u000010.0.0.1:8000']);
    expect(logs[0]).toMatch(/^warn pod metrics: cannot scrape http:\/\/10\.0\.0\.1:8000\/metrics: line 1: bad metric name/);
  });
});

describe('PodLoadReceiver', () => {
  it('takes the pod values and the other workers\' in-flight (total minus its own report); unknown when absent', () => {
    const reg = new EndpointRegistry({ connections: 1 });
    const a = reg.acquire({ name: 'a', host: '127.0.0.1', port: 1 });
    const b = reg.acquire({ name: 'b', host: '127.0.0.1', port: 2 });
    let now = 0;
    const rx = new PodLoadReceiver(() => reg.states(), () => now, 3000);
    a.inflight = 2;
    expect(rx.report()).toEqual({ t: 'sched:inflight', counts: [[a.key, 2]] });
    const c = reg.acquire({ name: 'c', host: '127.0.0.1', port: 3 });
    rx.apply({ t: 'sched:load', rows: [[a.key, 5, 1, 0.5, 120, null]], stale: [c.key], inflight: [[a.key, 7], [b.key, 4]], ejected: [] });
    expect(a.load).toMatchObject({ waiting: 5, running: 1, kvUsage: 0.5, ttftMs: 120, otherInflight: 5, scrapedUntil: 3000, scraped: true });
    expect(Number.isNaN(a.load.tpotMs)).toBe(true);
    expect(b.load).toMatchObject({ otherInflight: 4, scrapedUntil: 0, scraped: false });
    // c is scraped, its values not fresh: known as scraped, no values.
    expect(c.load).toMatchObject({ scrapedUntil: 0, scraped: true });
    // a goes stale at the primary: no longer fresh, still scraped.
    rx.apply({ t: 'sched:load', rows: [], stale: [a.key, c.key], inflight: [], ejected: [] });
    expect(a.load).toMatchObject({ scrapedUntil: 0, scraped: true });
    void reg.closeAll();
  });

  it('repeats no empty report: the first goes, then nothing while idle, then the next counts and the first empty one after', () => {
    const reg = new EndpointRegistry({ connections: 1 });
    const a = reg.acquire({ name: 'a', host: '127.0.0.1', port: 1 });
    const rx = new PodLoadReceiver(() => reg.states(), () => 0, 3000);
    expect(rx.report()).toEqual({ t: 'sched:inflight', counts: [] });
    expect(rx.report()).toBeNull();
    expect(rx.report()).toBeNull();
    a.inflight = 1;
    expect(rx.report()).toEqual({ t: 'sched:inflight', counts: [[a.key, 1]] });
    expect(rx.report()).toEqual({ t: 'sched:inflight', counts: [[a.key, 1]] });
    a.inflight = 0;
    expect(rx.report()).toEqual({ t: 'sched:inflight', counts: [] });
    expect(rx.report()).toBeNull();
    void reg.closeAll();
  });
});
