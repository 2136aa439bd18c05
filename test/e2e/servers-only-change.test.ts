import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { killOneWorker, startMock, startRouter, waitFor, type MockBackend, type Router } from '../helpers/processes.js';
import { modelRouteYaml, modelServerYaml } from '../helpers/resource-yaml.js';

/**
 * A change of ModelServers only (a pod moved, the routes as they were), real processes: the
 * workers are sent the servers alone (core:servers) and keep their routes as compiled, with the
 * new pod in each server's slot (route/route-table.ts). Every worker sends to the new pod, the
 * models keep their `created`; a change of the routes after it is applied whole, as before.
 */
const ROUTES = Array.from({ length: 40 }, (_, i) => modelRouteYaml(`route-${i}`, `model-${i}`, 'moving-server')).join('');

/** The pod that answered `model` on a connection of its own (none: ''). */
async function podOf(url: string, model: string): Promise<string> {
  const r = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json', connection: 'close' }, body: JSON.stringify({ model, prompt: 'hi', max_tokens: 2 }) });
  await r.text();
  return r.status === 200 ? r.headers.get('x-mock-pod') ?? '' : '';
}

/** Whether 8 requests in a row, each on its own connection (spread over both workers), went to `pod`. */
async function allTo(url: string, pod: string, model = 'model-7'): Promise<boolean> {
  for (let i = 0; i < 8; i++) if ((await podOf(url, model)) !== pod) return false;
  return true;
}

async function models(url: string): Promise<{ id: string; created: number }[]> {
  return ((await (await fetch(`${url}/v1/models`, { headers: { connection: 'close' } })).json()) as { data: { id: string; created: number }[] }).data;
}

describe('a change of ModelServers only, real processes', () => {
  let a: MockBackend;
  let b: MockBackend;
  let router: Router | undefined;
  beforeAll(async () => {
    [a, b] = await Promise.all([startMock('pod-a'), startMock('pod-b')]);
    router = await startRouter(modelServerYaml('moving-server', 'pod-a', a.port) + ROUTES, { workers: 2 });
  });
  afterAll(async () => {
    await router?.stop();
    await Promise.all([a?.stop(), b?.stop()]);
  });

  it('every worker sends to the pod moved to, the models keep their created; a route change after it applies', async () => {
    const r = router!;
    expect(await allTo(r.url, 'pod-a')).toBe(true);
    const before = await models(r.url);
    expect(before).toHaveLength(40);
    // Past the second the models were created in: a new `created` would show.
    await new Promise((res) => setTimeout(res, 1100));
    writeFileSync(r.resourcesFile, modelServerYaml('moving-server', 'pod-b', b.port) + ROUTES);
    await waitFor('every worker sends to pod-b', () => allTo(r.url, 'pod-b'), 15_000, 50);
    expect(await podOf(r.url, 'model-39')).toBe('pod-b');
    expect(r.stderr()).toMatch(/resources reloaded from .*\(snapshot 2\): 40 routes .*; only ModelServers changed: the routes stay as compiled/);
    expect(await models(r.url)).toEqual(before);
    // And back, twice: each change is applied on the routes as compiled.
    writeFileSync(r.resourcesFile, modelServerYaml('moving-server', 'pod-a', a.port) + ROUTES);
    await waitFor('every worker sends to pod-a again', () => allTo(r.url, 'pod-a'), 15_000, 50);
    writeFileSync(r.resourcesFile, modelServerYaml('moving-server', 'pod-b', b.port) + ROUTES);
    await waitFor('every worker sends to pod-b again', () => allTo(r.url, 'pod-b'), 15_000, 50);
    // A change of the routes (one more): compiled whole, with the servers as they are now.
    writeFileSync(r.resourcesFile, modelServerYaml('moving-server', 'pod-b', b.port) + ROUTES + modelRouteYaml('route-new', 'model-new', 'moving-server'));
    await waitFor('model-new served by every worker', () => allTo(r.url, 'pod-b', 'model-new'), 15_000, 50);
    expect(r.stderr()).toMatch(/\(snapshot 5\): 41 routes [^\n]*\n/);
    expect(r.stderr()).not.toMatch(/\(snapshot 5\): 41 routes [^\n]*only ModelServers changed/);
    const after = await models(r.url);
    expect(after).toHaveLength(41);
    expect(after[0].created).toBeGreaterThan(before[0].created);
    expect(r.stderr()).not.toMatch(/rejected|has the routes of another snapshot/);
  });

  it('a worker started after changes of ModelServers only takes the next ones on its routes as compiled too', async () => {
    const r = router!;
    const readyLines = (): number => (r.stderr().match(/ready: 2 workers listening/g) ?? []).length;
    const move = async (pod: string, port: number): Promise<void> => {
      writeFileSync(r.resourcesFile, modelServerYaml('moving-server', pod, port) + ROUTES + modelRouteYaml('route-new', 'model-new', 'moving-server'));
      await waitFor(`every worker sends to ${pod}`, () => allTo(r.url, pod, 'model-new'), 15_000, 50);
    };
    // The snapshot in use is one of ModelServers only: its routes came with an earlier one.
    await move('pod-a', a.port);
    const ready = readyLines();
    await killOneWorker(r);
    // The replacement listens and has applied the snapshot (sent whole as it started).
    await waitFor('the replacement ready', () => readyLines() > ready, 15_000, 50);
    await waitFor('both workers send to pod-a', () => allTo(r.url, 'pod-a', 'model-new'), 15_000, 50);
    for (const [pod, port] of [['pod-b', b.port], ['pod-a', a.port], ['pod-b', b.port]] as const) await move(pod, port);
    // Its snapshot, sent whole as it started, said the version its routes came with: no worker asked for one again.
    expect(r.stderr()).not.toMatch(/has the routes of another snapshot/);
  });
});
