/**
 * A backend pod removed and re-added between two scrapes: every process counts it from 0 again, so
 * what workers that exited had counted for it before must go too. Kept, it would be the whole sum
 * after the re-add, a drop Prometheus reads as a counter reset that counts those old failures again.
 * Built router, 2 workers both replaced (all earlier counts are then kept by the primary), two reloads.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childPids, killOneWorker, postFresh, resourcesFor, startMock, startRouter, unusedPort, waitFor, writeFile, type MockBackend, type Router } from '../helpers/processes.js';

/** Exposition lines (not comments) of `family` that name backend pod `pod`. */
function seriesOf(text: string, family: string, pod: string): string[] {
  return text.split('\n').filter((l) => l.startsWith(`${family}{`) && l.includes(`backend_pod="${pod}"`));
}

describe('/metrics after a backend pod left the configuration and came back (built router, 2 workers)', () => {
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
  const failures = (text: string): number => seriesOf(text, 'inference_router_upstream_connect_failures_total', 'pod-gone')
    .reduce((a, l) => a + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
  const bothAnswer = async (): Promise<void> => {
    await waitFor('both workers in the scrape', async () => (await scrape()).includes('inference_router_metrics_scrape_workers{state="answered"} 2'), 10_000);
  };
  const reload = async (pods: { name: string; port: number }[]): Promise<void> => {
    const reloads = router.stderr().split('resources reloaded').length;
    writeFile(router.resourcesFile, resourcesFor(pods));
    await waitFor('the reload', () => router.stderr().split('resources reloaded').length > reloads, 10_000);
  };

  it('what exited workers counted for it before it left goes: the counter restarts from what was counted since', async () => {
    for (let i = 0; i < 40; i++) expect((await postFresh(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'hello' })).status).toBe(200);
    const before = failures(await scrape());
    expect(before).toBeGreaterThan(0);

    // Both workers are replaced: every failure counted so far is an exited worker's, kept by the primary.
    const first = childPids(router.pid);
    await killOneWorker(router);
    await bothAnswer();
    await killOneWorker(router);
    await bothAnswer();
    expect(childPids(router.pid).filter((p) => first.includes(p))).toEqual([]);
    expect(failures(await scrape())).toBe(before);

    // pod-gone leaves the configuration and comes back, with no scrape between.
    await reload([{ name: 'pod-a', port: mock.port }]);
    await reload([{ name: 'pod-a', port: mock.port }, { name: 'pod-gone', port: gonePort }]);
    const back = await scrape();
    // The workers have it again (its gauge), and nothing counted for it since: no counter series.
    expect(seriesOf(back, 'inference_router_upstream_inflight_requests', 'pod-gone').length).toBeGreaterThan(0);
    expect(seriesOf(back, 'inference_router_upstream_connect_failures_total', 'pod-gone')).toEqual([]);

    // New failures count from 0 (at most one per request: its retry goes to pod-a); the old ones do not come back.
    let sent = 0;
    let after = 0;
    while (after === 0 && sent < 40) {
      for (let i = 0; i < 5; i++, sent++) expect((await postFresh(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'hello' })).status).toBe(200);
      after = failures(await scrape());
    }
    expect(after).toBeGreaterThan(0);
    expect(after).toBeLessThanOrEqual(sent);
  }, 60_000);
});
