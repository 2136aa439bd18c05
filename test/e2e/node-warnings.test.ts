/**
 * Node's own warnings in a router process reach the operational log as lines of its format, not
 * as Node's text on stderr, and Node's flags about warnings still hold. Built router, 1 worker;
 * the warning is made inside the real worker and primary by a module preloaded with
 * `node --require` (a signal makes it emit one), as a dependency calling a deprecated API would.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { childPids, resourcesFor, startMock, startRouter, tempDir, waitFor, writeFile, type MockBackend, type Router } from '../helpers/processes.js';

const PRELOAD = `
const cluster = require('node:cluster');
process.on('SIGUSR2', () => process.emitWarning('made by the test in the ' + (cluster.isWorker ? 'worker' : 'primary'), { type: 'DeprecationWarning', code: 'DEP0999' }));
`;

let router: Router | null = null;
let mock: MockBackend | null = null;
afterEach(async () => {
  await router?.kill('SIGKILL');
  await mock?.kill();
  router = null;
  mock = null;
});

async function start(nodeArgs: string[] = []): Promise<number> {
  mock = await startMock('pod-a');
  const dir = tempDir();
  const preload = join(dir, 'warn-on-signal.cjs');
  writeFile(preload, PRELOAD);
  router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), {
    dir, workers: 1, nodeArgs: [...nodeArgs, '--require', preload], env: { ROUTER_LOG_FORMAT: 'json' },
  });
  const pids = childPids(router.pid);
  expect(pids).toHaveLength(1);
  return pids[0];
}

const stderrLines = (): string[] => router!.stderr().split('\n').filter((l) => l.length > 0);

describe('Node\'s warnings', () => {
  it('a warning in a worker and in the primary: one warn line of the JSON log each, every stderr line JSON', async () => {
    const worker = await start();
    process.kill(worker, 'SIGUSR2');
    process.kill(router!.pid, 'SIGUSR2');
    const warnings = await waitFor('both warnings logged', () => {
      const found = stderrLines().map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.event === 'warning');
      return found.length === 2 ? found : null;
    });
    expect(warnings).toEqual(expect.arrayContaining([
      expect.objectContaining({ level: 'warn', process: 'worker', pid: worker, type: 'DeprecationWarning', code: 'DEP0999', message: '[DEP0999] DeprecationWarning: made by the test in the worker' }),
      expect.objectContaining({ level: 'warn', process: 'primary', pid: router!.pid, code: 'DEP0999', message: '[DEP0999] DeprecationWarning: made by the test in the primary' }),
    ]));
    for (const l of stderrLines()) expect(() => JSON.parse(l), `not a JSON line: ${l}`).not.toThrow();
  }, 60_000);

  it('--disable-warning of its code: not written, in either process', async () => {
    const worker = await start(['--disable-warning=DEP0999']);
    process.kill(worker, 'SIGUSR2');
    process.kill(router!.pid, 'SIGUSR2');
    await new Promise((r) => setTimeout(r, 500));
    expect(stderrLines().filter((l) => l.includes('DEP0999'))).toEqual([]);
    expect((await fetch(`${router!.url}/readyz`)).status).toBe(200); // both still running
  }, 60_000);
});
