/**
 * A worker that dies (and its replacement) must not make the instance's counters go down: a sum
 * that drops reads to Prometheus as a counter reset, and rate() then counts the whole remaining
 * total again as new increase. Built router, 2 workers, one killed with SIGKILL.
 */
import { describe, expect, it } from 'vitest';
import { killOneWorker, postFresh, waitFor } from '../helpers/processes.js';
import { routerWithMock } from '../helpers/router-fixture.js';
import { total } from '../helpers/metrics-text.js';


describe('/metrics across a worker restart (built router, 2 workers)', () => {
  const started = routerWithMock({ workers: 2 });

  const scrape = async (): Promise<string> => (await fetch(`${started.router.url}/metrics`)).text();

  it('counters and histogram counts keep what the dead worker counted', async () => {
    const n = 40;
    for (let i = 0; i < n; i++) expect((await postFresh(`${started.router.url}/v1/completions`, { model: 'sf-model', prompt: 'hello' })).status).toBe(200);
    const before = await scrape();
    const requests = total(before, 'inference_router_requests_total', 'status="200"');
    const durations = total(before, 'inference_router_request_duration_seconds_count');
    const input = total(before, 'inference_router_input_tokens_total');
    expect(requests).toBe(n);
    expect(durations).toBe(n);
    expect(input).toBeGreaterThan(0);

    await killOneWorker(started.router);
    await waitFor('ready again', async () => (await fetch(`${started.router.url}/readyz`)).status === 200, 10_000);
    // Both workers (the survivor and the replacement) are in the scrape.
    await waitFor('both workers in the scrape', async () => total(await scrape(), 'inference_router_metrics_scrape_workers', 'state="answered"') === 2, 10_000);

    const after = await scrape();
    expect(total(after, 'inference_router_requests_total', 'status="200"')).toBe(requests);
    expect(total(after, 'inference_router_request_duration_seconds_count')).toBe(durations);
    expect(total(after, 'inference_router_input_tokens_total')).toBe(input);

    // And it goes on counting from there.
    for (let i = 0; i < 10; i++) expect((await postFresh(`${started.router.url}/v1/completions`, { model: 'sf-model', prompt: 'hello' })).status).toBe(200);
    expect(total(await scrape(), 'inference_router_requests_total', 'status="200"')).toBe(requests + 10);
  });
});
