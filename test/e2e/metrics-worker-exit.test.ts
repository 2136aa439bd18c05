/**
 * A worker that dies (and its replacement) must not make the instance's counters go down: a sum
 * that drops reads to Prometheus as a counter reset, and rate() then counts the whole remaining
 * total again as new increase. Built router, 2 workers, one killed with SIGKILL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childPids, postFresh, resourcesFor, startMock, startRouter, waitFor, type MockBackend, type Router } from '../helpers/processes.js';

/** Sum of every sample of `name` (without suffixes) whose line contains all of `has`. */
function total(text: string, name: string, ...has: string[]): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (has.every((h) => line.includes(h))) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

describe('/metrics across a worker restart (built router, 2 workers)', () => {
  let mock: MockBackend;
  let router: Router;

  beforeAll(async () => {
    mock = await startMock('pod-a');
    router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), { workers: 2 });
  });
  afterAll(async () => {
    await router?.kill();
    await mock?.kill();
  });

  const scrape = async (): Promise<string> => (await fetch(`${router.url}/metrics`)).text();

  it('counters and histogram counts keep what the dead worker counted', async () => {
    const n = 40;
    for (let i = 0; i < n; i++) expect((await postFresh(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'hello' })).status).toBe(200);
    const before = await scrape();
    const requests = total(before, 'inference_router_requests_total', 'status="200"');
    const durations = total(before, 'inference_router_request_duration_seconds_count');
    const input = total(before, 'inference_router_input_tokens_total');
    expect(requests).toBe(n);
    expect(durations).toBe(n);
    expect(input).toBeGreaterThan(0);

    const pids = childPids(router.pid);
    expect(pids.length).toBe(2);
    process.kill(pids[0], 'SIGKILL');
    await waitFor('a replacement worker', () => {
      const now = childPids(router.pid);
      return now.length === 2 && !now.includes(pids[0]);
    }, 10_000);
    await waitFor('ready again', async () => (await fetch(`${router.url}/readyz`)).status === 200, 10_000);
    // Both workers (the survivor and the replacement) are in the scrape.
    await waitFor('both workers in the scrape', async () => total(await scrape(), 'inference_router_metrics_scrape_workers', 'state="answered"') === 2, 10_000);

    const after = await scrape();
    expect(total(after, 'inference_router_requests_total', 'status="200"')).toBe(requests);
    expect(total(after, 'inference_router_request_duration_seconds_count')).toBe(durations);
    expect(total(after, 'inference_router_input_tokens_total')).toBe(input);

    // And it goes on counting from there.
    for (let i = 0; i < 10; i++) expect((await postFresh(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'hello' })).status).toBe(200);
    expect(total(await scrape(), 'inference_router_requests_total', 'status="200"')).toBe(requests + 10);
  });
});
