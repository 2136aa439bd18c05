/**
 * ROUTER_UPSTREAM_IDLE_TIMEOUT: a worker closes a connection to a pod that has gone unused that
 * long, and opens a new one for the next request. The connections are counted by the kernel
 * (/proc/net/tcp), not by the router, next to the router's own gauge.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postJson, resourcesFor, startMock, startRouter, waitFor, type MockBackend, type Router } from '../helpers/processes.js';
import { sample } from '../helpers/metrics-text.js';
import { connectionsTo } from '../helpers/tcp-connections.js';

async function answered(router: Router): Promise<number> {
  const r = await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'San Francisco is a' });
  await r.text();
  return r.status;
}

async function gauge(router: Router): Promise<number | undefined> {
  return sample(await (await fetch(`${router.url}/metrics`)).text(), 'inference_router_upstream_connections{backend_pod="pod-a",pod="pod-a"}');
}

describe('connections to a pod left unused (ROUTER_UPSTREAM_IDLE_TIMEOUT)', () => {
  let shortMock: MockBackend;
  let defaultMock: MockBackend;
  let short: Router;
  let byDefault: Router;

  beforeAll(async () => {
    shortMock = await startMock('pod-a');
    defaultMock = await startMock('pod-a');
    short = await startRouter(resourcesFor([{ name: 'pod-a', port: shortMock.port }]), { workers: 1, env: { ROUTER_UPSTREAM_IDLE_TIMEOUT: '300ms' } });
    byDefault = await startRouter(resourcesFor([{ name: 'pod-a', port: defaultMock.port }]), { workers: 1 });
  });
  afterAll(async () => {
    await short?.kill();
    await byDefault?.kill();
    await shortMock?.kill();
    await defaultMock?.kill();
  });

  it('closes an unused connection after the timeout and opens a new one for the next request', async () => {
    expect(await answered(short)).toBe(200);
    expect(connectionsTo(shortMock.port)).toBe(1);
    expect(await gauge(short)).toBe(1);
    const started = Date.now();
    await waitFor('the idle connection to close', () => connectionsTo(shortMock.port) === 0, 5_000);
    const closedAfter = Date.now() - started;
    expect(closedAfter).toBeLessThan(3_000);
    expect(await gauge(short)).toBe(0);
    expect(await answered(short)).toBe(200);
    expect(connectionsTo(shortMock.port)).toBe(1);
  });

  it('keeps it open by default (4 s) across a second of quiet, and reuses it', async () => {
    expect(await answered(byDefault)).toBe(200);
    expect(connectionsTo(defaultMock.port)).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(connectionsTo(defaultMock.port)).toBe(1);
    expect(await answered(byDefault)).toBe(200);
    expect(connectionsTo(defaultMock.port)).toBe(1);
    expect(await gauge(byDefault)).toBe(1);
  });
});
