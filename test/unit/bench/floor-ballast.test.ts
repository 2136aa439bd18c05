/**
 * The bare floor (bench/upstream-proxy.ts, built) with its calibration options: `--burn-us U`
 * makes each request cost the proxy at least U µs more CPU, and the answers stay those of the
 * backend. Real processes: the mock backend and the floor, over HTTP.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { startHttp1Proxy, startMock } from '../../../bench/targets.js';
import type { Target } from '../../../bench/targets.js';
import { treeCpu } from '../../../bench/proc-cpu.js';

const started: Target[] = [];
afterAll(async () => {
  await Promise.all(started.map((t) => t.proc.stop()));
});

/** Sends `n` completions one after another; gives the statuses. */
async function send(url: string, n: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < n; i++) {
    const r = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', prompt: 'hi' }) });
    await r.arrayBuffer();
    statuses.push(r.status);
  }
  return statuses;
}

describe('the floor\'s calibration options', () => {
  it('--burn-us spins that much CPU per request; with --garbage-objects too the answers are unchanged', async () => {
    const mock = await startMock('ballast-mock');
    started.push(mock);
    const floor = await startHttp1Proxy(mock.url, 1, ['--burn-us', '20000', '--garbage-objects', '1000']);
    started.push(floor);
    await send(floor.url, 2); // connections open, code warm
    const cpu = treeCpu(floor.proc.pid);
    const statuses = await send(floor.url, 10);
    expect(statuses).toEqual(new Array(10).fill(200));
    // 10 requests of at least 20 ms of CPU each, whatever else the machine runs.
    expect(cpu.delta()).toBeGreaterThanOrEqual(10 * 20);
  });

  it('refuses a count that is not an integer of 0 or more', async () => {
    const mock = await startMock('ballast-mock-2');
    started.push(mock);
    await expect(startHttp1Proxy(mock.url, 1, ['--burn-us', '-3'])).rejects.toThrow(/--burn-us: expected an integer of 0 or more/);
  });
});
