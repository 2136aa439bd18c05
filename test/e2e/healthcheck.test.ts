/**
 * dist/healthcheck.js (the container image's HEALTHCHECK) against a real router started with
 * `--port`: it finds that port from the router process, not from its own ROUTER_PORT, and fails,
 * naming the reason, once the router is gone. Where user and PID namespaces can be made
 * (unshare), the Dockerfile's HEALTHCHECK command runs as written beside a router that is PID 1 of
 * its namespace, as in the container.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import {
  announcedListening, CLI, ROOT, childPids, resourcesFor, spawnProcess, startMock, startProcess, tempDir, waitFor, writeFile,
} from '../helpers/processes.js';
import { routerWithMock } from '../helpers/router-fixture.js';
import { serverPort } from '../helpers/ports.js';

const HEALTHCHECK = join(ROOT, 'dist/healthcheck.js');

async function healthcheck(pid: number, env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stderr: string }> {
  const p = startProcess([HEALTHCHECK, String(pid)], env, { name: 'healthcheck' });
  const code = await p.exited;
  return { code, stderr: p.stderr() };
}

describe('the image health check, against a router started with --port', () => {
  const started = routerWithMock({ workers: 1 });

  it('is healthy on the port the router listens on, whatever ROUTER_PORT its own environment holds', async () => {
    expect(started.router.port).not.toBe(8080);
    expect(await healthcheck(started.router.pid, { ROUTER_PORT: '1' })).toEqual({ code: 0, stderr: '' });
  });

  it('a process that is no router, and a router that stopped, are unhealthy, with the reason', async () => {
    const mockCheck = await healthcheck(started.mock.pid);
    expect(mockCheck.code).toBe(1);
    expect(mockCheck.stderr).toBe(`inference-router health check: process ${started.mock.pid} is not the router (node …/cli.js)\n`);
    await started.router.kill();
    const gone = await healthcheck(started.router.pid);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toBe(`inference-router health check: no process ${started.router.pid} (ENOENT)\n`);
  });
});

/** Whether this machine lets an unprivileged process make user, PID and mount namespaces. */
const namespaces = spawnSync('unshare', ['-Urpf', '--mount-proc', 'true']).status === 0
  && spawnSync('nsenter', ['--version']).status === 0;

/** The HEALTHCHECK command of deploy/Dockerfile, its /app/ (the image's WORKDIR) made this checkout. */
function dockerfileHealthcheck(): string[] {
  const text = readFileSync(join(ROOT, 'deploy/Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
  const cmd = JSON.parse(/^HEALTHCHECK .*CMD (\[.*\])$/m.exec(text)![1]) as string[];
  return cmd.map((a) => a.replace(/^\/app\//, ROOT));
}

describe.skipIf(!namespaces)('the Dockerfile HEALTHCHECK, with the router as PID 1 of its namespace', () => {
  it('is healthy on the --port=N the router was started with (ROUTER_PORT unset)', async () => {
    const mock = await startMock('pod-ns');
    const dir = tempDir();
    const file = join(dir, 'resources.yaml');
    writeFile(file, resourcesFor([{ name: 'pod-ns', port: mock.port }]));
    const port = await serverPort();
    const ns = spawnProcess('unshare', ['-Urpf', '--mount-proc', process.execPath, CLI, '--resources', file, `--port=${port}`, '--workers', '1'],
      { ACCESS_LOG_ENABLED: 'false', ROUTER_DRAIN_DELAY: '0', ROUTER_PORT: '' }, { name: 'router in a PID namespace' });
    // Its own ready line as well: another test's router on the same port would answer /readyz.
    const announced = announcedListening(ns, port);
    try {
      await waitFor('router to be ready', async () => {
        if (ns.child.exitCode !== null) throw new Error(`router exited ${ns.child.exitCode}: ${ns.stderr()}`);
        return announced() && (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200;
      }, 30_000);
      const [router] = childPids(ns.pid);
      const check = (): { status: number | null; stderr: string } => {
        const r = spawnSync('nsenter', ['-t', String(router), '-U', '-p', '-m', '--preserve-credentials', '--', ...dockerfileHealthcheck()], { encoding: 'utf8', timeout: 10_000 });
        return { status: r.status, stderr: r.stderr };
      };
      expect(check()).toEqual({ status: 0, stderr: '' });
      process.kill(router, 'SIGTERM');
      await ns.exited;
    } finally {
      for (const pid of childPids(ns.pid)) process.kill(pid, 'SIGKILL');
      await ns.kill();
      await mock.kill();
    }
  });
});
