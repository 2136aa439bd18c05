import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, postJson, resourcesFor, startMock, startRouter, tempDir, waitFor, type MockBackend, type Router } from '../helpers/processes.js';

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
