/**
 * A rollout replaces backend pods: the series of the pods that left the configuration must go
 * (gauges and counters alike), also what a worker that exited counted for them, or every rollout
 * adds series that are exported for ever. Built router, 2 workers, a file reload.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killOneWorker, postFresh, resourcesFor, startMock, startRouter, unusedPort, waitFor, writeFile, type MockBackend, type Router } from '../helpers/processes.js';

/** Exposition lines (not comments) that name backend pod `pod`. */
function seriesOf(text: string, pod: string): string[] {
  return text.split('\n').filter((l) => !l.startsWith('#') && l.includes(`backend_pod="${pod}"`));
}

describe('/metrics after a backend pod left the configuration (built router, 2 workers)', () => {
  let mock: MockBackend;
  let router: Router;
  let gonePort: number;

  beforeAll(async () => {
    mock = await startMock('pod-a');
    gonePort = await unusedPort();
    // pod-gone: nothing listens on its port, so attempts on it fail to connect (and are retried on pod-a).
    router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }, { name: 'pod-gone', port: gonePort }]), {
      workers: 2,
      env: { ROUTER_OUTLIER_CONSECUTIVE_FAILURES: '1000' },
    });
  });
  afterAll(async () => {
    await router?.kill();
    await mock?.kill();
  });

  const scrape = async (): Promise<string> => (await fetch(`${router.url}/metrics`)).text();
  const failures = (text: string): number => seriesOf(text, 'pod-gone')
    .filter((l) => l.startsWith('inference_router_upstream_connect_failures_total{'))
    .reduce((a, l) => a + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);

  it('its gauges and counters go with the reload, those of an exited worker included, and do not come back', async () => {
    for (let i = 0; i < 40; i++) expect((await postFresh(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'hello' })).status).toBe(200);
    const before = await scrape();
    expect(failures(before)).toBeGreaterThan(0);
    expect(seriesOf(before, 'pod-gone').some((l) => l.startsWith('inference_router_upstream_inflight_requests{'))).toBe(true);

    // A worker dies: what it counted for pod-gone stays in the sum (metrics-retained.ts).
    await killOneWorker(router);
    await waitFor('both workers in the scrape', async () => (await scrape()).includes('inference_router_metrics_scrape_workers{state="answered"} 2'), 10_000);
    expect(failures(await scrape())).toBe(failures(before));

    // The rollout: pod-gone leaves the configuration.
    const reloads = router.stderr().split('resources reloaded').length;
    writeFile(router.resourcesFile, resourcesFor([{ name: 'pod-a', port: mock.port }]));
    await waitFor('the reload', () => router.stderr().split('resources reloaded').length > reloads, 10_000);
    await waitFor('the workers applied it', async () => seriesOf(await scrape(), 'pod-gone').every((l) => !l.startsWith('inference_router_upstream_inflight_requests{')), 10_000);
    expect(seriesOf(await scrape(), 'pod-gone')).toEqual([]);

    // Later scrapes, and requests meanwhile, do not bring them back; pod-a's series stay.
    for (let i = 0; i < 5; i++) expect((await postFresh(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'hello' })).status).toBe(200);
    const after = await scrape();
    expect(seriesOf(after, 'pod-gone')).toEqual([]);
    expect(seriesOf(after, 'pod-a').length).toBeGreaterThan(0);
  }, 60_000);
});
