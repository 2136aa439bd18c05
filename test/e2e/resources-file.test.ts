import { spawnSync } from 'node:child_process';
import { mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, postJson, resourcesFor, startMock, startRouter, tempDir, waitFor, type MockBackend, type Router } from '../helpers/processes.js';
import { routerWithMock } from '../helpers/router-fixture.js';

/** A valid resources file padded with a comment to `bytes` bytes. */
function padded(yaml: string, bytes: number): string {
  return `${yaml}# ${'x'.repeat(Math.max(0, bytes - yaml.length - 3))}\n`;
}

async function status(router: Router, model: string): Promise<number> {
  const r = await postJson(`${router.url}/v1/completions`, { model, prompt: 'x' });
  await r.text();
  return r.status;
}

describe('resources file size cap', () => {
  it('a bad ROUTER_RESOURCES_MAX_BYTES stops the router with exit 2 naming it', () => {
    const r = spawnSync(process.execPath, [CLI, '--resources', 'x.yaml'], { encoding: 'utf8', env: { ...process.env, ROUTER_RESOURCES_MAX_BYTES: 'lots' } });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('ROUTER_RESOURCES_MAX_BYTES: expected an integer');
  });

  it('a file larger than the cap at start stops the router with exit 2 naming the file and the cap', () => {
    const dir = tempDir();
    const file = join(dir, 'resources.yaml');
    writeFileSync(file, padded(resourcesFor([{ name: 'p', port: 1 }]), 5000));
    const r = spawnSync(process.execPath, [CLI, '--resources', file, '--workers', '1'], {
      encoding: 'utf8', timeout: 20_000, env: { ...process.env, ROUTER_RESOURCES_MAX_BYTES: '4096' },
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(file);
    expect(r.stderr).toContain('5000 bytes, more than ROUTER_RESOURCES_MAX_BYTES (4096)');
  });
});

describe('resources reloads that are refused keep the last good config', () => {
  let mock: MockBackend;
  let router: Router;
  beforeAll(async () => {
    mock = await startMock('pod-a');
    router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), { env: { ROUTER_RESOURCES_MAX_BYTES: '4096' } });
  });
  afterAll(async () => {
    await router?.kill();
    await mock?.kill();
  });

  it('a file over the cap is rejected and logged; the old routes stay', async () => {
    expect(await status(router, 'sf-model')).toBe(200);
    writeFileSync(router.resourcesFile, padded(resourcesFor([{ name: 'pod-a', port: mock.port }], { model: 'too-big' }), 6000));
    await waitFor('the oversized file to be rejected', () => router.stderr().includes('6000 bytes, more than ROUTER_RESOURCES_MAX_BYTES (4096)'), 5000);
    expect(router.stderr()).toMatch(/resources reload rejected, keeping the last good config: .*resources\.yaml: the resources file is 6000 bytes/);
    expect(await status(router, 'sf-model')).toBe(200);
    expect(await status(router, 'too-big')).toBe(404);
  });

  it('an empty file is rejected and logged; the old routes stay; then a good file applies', async () => {
    writeFileSync(router.resourcesFile, resourcesFor([{ name: 'pod-a', port: mock.port }], { model: 'before-empty' }));
    await waitFor('the good file to apply', async () => (await status(router, 'before-empty')) === 200, 5000);
    writeFileSync(router.resourcesFile, '');
    await waitFor('the empty file to be rejected', () => /resources reload rejected, keeping the last good config: .*resources\.yaml: the file holds no resources \(empty\)/.test(router.stderr()), 5000);
    expect(await status(router, 'before-empty')).toBe(200);
    // Only comments and a document marker: no resources either.
    writeFileSync(router.resourcesFile, '# being edited\n---\n');
    await waitFor('the comment-only file to be rejected', () => router.stderr().includes('the file holds no resources (no YAML document)'), 5000);
    expect(await status(router, 'before-empty')).toBe(200);
    writeFileSync(router.resourcesFile, resourcesFor([{ name: 'pod-a', port: mock.port }], { model: 'after-empty' }));
    await waitFor('the next good file to apply', async () => (await status(router, 'after-empty')) === 200, 5000);
    expect(await status(router, 'before-empty')).toBe(404);
  });

  it('a file cut off mid-document is rejected; an explicitly empty List removes every route', async () => {
    const good = resourcesFor([{ name: 'pod-a', port: mock.port }], { model: 'after-empty' });
    writeFileSync(router.resourcesFile, good.slice(0, good.indexOf('targetModels:')));
    await waitFor('the truncated file to be rejected', () => router.stderr().split('\n').filter((l) => l.includes('reload rejected')).length >= 4, 5000);
    expect(await status(router, 'after-empty')).toBe(200);
    writeFileSync(router.resourcesFile, 'kind: List\nitems: []\n');
    await waitFor('the empty List to apply', async () => (await status(router, 'after-empty')) === 404, 5000);
    expect(router.stderr()).toMatch(/reloaded from .* 0 routes \[\], 0 servers \[\]/);
  });
});

describe('resources files written as kubectl reads them', () => {
  const started = routerWithMock({ workers: 1 });

  it('typed lists, merge keys, unnamed rules and retry/timeout/global defaults apply; an unknown field is named in a warning', async () => {
    const api = 'networking.serving.volcano.sh/v1alpha1';
    writeFileSync(started.router.resourcesFile, `apiVersion: ${api}
kind: ModelServerList
items:
- metadata: {name: sf-server}
  spec:
    endpoints: [{name: pod-a, address: "127.0.0.1:${started.mock.port}"}]
    trafficPolicy: {timeout: 0s, retry: {retryInterval: 100ms}}
---
apiVersion: ${api}
kind: ModelRouteList
items:
- metadata: {name: kubectl-route}
  spec:
    modelName: kubectl-model
    rules:
    - name: ""
      modelMatch:
        header: {x-tier: {exact: premium}}
      targetModels:
      - &target {modelServerName: sf-server, weight: 10}
      - {<<: *target, weight: 0}
    rateLimit: {inputTokensPerUnit: 100000, global: {}}
`);
    await waitFor('the kubectl-style file to apply', async () => (await status(started.router, 'kubectl-model')) === 200, 5000);
    expect(started.router.stderr()).toContain('document 2, items[0] (ModelRoute default/kubectl-route): spec.rules[0].modelMatch.header: unknown field, ignored: neither the route API nor this router has it');
    expect(started.router.stderr()).not.toMatch(/reload (rejected|failed)/);
  });
});

describe('readiness follows the primary', () => {
  it('/readyz answers 503 while the primary cannot answer, and 200 again once it does', async () => {
    const mock = await startMock('pod-a');
    const router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]));
    try {
      router.child.kill('SIGSTOP'); // the primary's event loop stops, as when it is stalled
      await waitFor('/readyz to answer 503', async () => (await fetch(`${router.url}/readyz`)).status === 503, 15_000);
      router.child.kill('SIGCONT');
      await waitFor('/readyz to answer 200 again', async () => (await fetch(`${router.url}/readyz`)).status === 200, 15_000);
      expect(router.stderr()).toContain('the primary has not answered a heartbeat');
      await waitFor('the recovery to be logged', () => router.stderr().includes('the primary answers again; readiness restored'), 5000);
    } finally {
      router.child.kill('SIGCONT');
      await router.kill();
      await mock.kill();
    }
  });
});

// How kubelet updates a ConfigMap volume: the file is a symlink through `..data` to a timestamped
// directory; an update writes a new directory, points `..data_tmp` at it, renames that over `..data`
// and removes the old directory. The router watches the file's directory through inotify.
describe('a resources file in a Kubernetes ConfigMap volume', () => {
  let mock: MockBackend;
  let router: Router;
  let dir: string;
  let generation = 0;
  let current = '';

  /** One kubelet update: a new generation of the file, swapped in. */
  function kubeletUpdate(yaml: string): void {
    const next = `..2026_11_26_09_00_0${++generation}`;
    mkdirSync(join(dir, next));
    writeFileSync(join(dir, next, 'resources.yaml'), yaml);
    symlinkSync(next, join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
    if (current !== '') rmSync(join(dir, current), { recursive: true });
    current = next;
  }

  beforeAll(async () => {
    mock = await startMock('pod-a');
    dir = tempDir();
    const first = resourcesFor([{ name: 'pod-a', port: mock.port }]);
    router = await startRouter(first, { dir });
    // The router started on a plain file; turn it into the volume's layout (same content).
    kubeletUpdate(first);
    symlinkSync(join('..data', 'resources.yaml'), join(dir, 'resources.yaml.link'));
    renameSync(join(dir, 'resources.yaml.link'), join(dir, 'resources.yaml'));
  });
  afterAll(async () => {
    await router?.kill();
    await mock?.kill();
  });

  it('each update applies, as it would with every ConfigMap edit', async () => {
    expect(await status(router, 'sf-model')).toBe(200);
    kubeletUpdate(resourcesFor([{ name: 'pod-a', port: mock.port }], { model: 'second-model' }));
    // Within 3 s: sooner than the 5 s safety poll, so the watch is what applied it.
    await waitFor('the first update to apply', async () => (await status(router, 'second-model')) === 200, 3000);
    expect(await status(router, 'sf-model')).toBe(404);
    kubeletUpdate(resourcesFor([{ name: 'pod-a', port: mock.port }], { model: 'third-model' }));
    await waitFor('the second update to apply', async () => (await status(router, 'third-model')) === 200, 3000);
    expect(await status(router, 'second-model')).toBe(404);
    expect(router.stderr()).not.toMatch(/reload (rejected|failed)/);
  }, 30_000);
});

describe('a change only in a ModelServer no route targets', () => {
  let mock: MockBackend;
  let router: Router & { resourcesFile: string };
  const unused = (port: number): string => `---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelServer
metadata: { name: unused-server, namespace: default }
spec: { model: m, endpoints: [{ name: unused-1, address: "127.0.0.1:${port}" }] }
`;
  const file = (model: string, unusedPort: number): string => resourcesFor([{ name: 'pod-a', port: mock.port }], { model, extraRoutes: unused(unusedPort) });

  beforeAll(async () => {
    mock = await startMock('pod-a');
    router = await startRouter(file('sf-model', 1), { workers: 1 });
  }, 60_000);
  afterAll(async () => {
    await router?.kill();
    await mock?.kill();
  });

  it('keeps the workers\' snapshot and says so; a change they use publishes a new one', async () => {
    expect(router.stderr()).toMatch(/resources loaded from file .*\(snapshot 1\).*1 ModelServers no route served targets, not used .*\[default\/unused-server\]/);
    writeFileSync(router.resourcesFile, file('sf-model', 2));
    await waitFor('the change to be read', () => /reload: resources reloaded from .*resources\.yaml: nothing the routes use changed \(a change only in ModelServers no route targets, or none\); snapshot 1 kept/.test(router.stderr()), 5000);
    expect(router.stderr()).not.toMatch(/\(snapshot 2\)/);
    expect(await status(router, 'sf-model')).toBe(200);
    writeFileSync(router.resourcesFile, file('other-model', 2));
    await waitFor('the route change to apply', async () => (await status(router, 'other-model')) === 200, 5000);
    expect(router.stderr()).toMatch(/resources reloaded from .*\(snapshot 2\)/);
  }, 30_000);
});
