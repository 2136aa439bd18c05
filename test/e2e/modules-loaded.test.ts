/**
 * What each process of the built router loads from node_modules, started as a user starts it.
 * A package only some configurations need is loaded only by them (docs/internals/performance-changes.md,
 * "A worker's start"): without an auth file no process loads jose, and with one only the workers
 * do (the primary parses the file and sends them its config); without a scheduler file a
 * worker loads no yaml (it reads no YAML: the primary sends it compiled snapshots and the auth config); without a
 * global limit no process loads ioredis. Each process's modules are listed through NODE_OPTIONS,
 * which the workers inherit (test/helpers/module-log.ts).
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeModuleLoggers } from '../helpers/module-log.js';
import { childPids, resourcesFor, startRouter, tempDir, waitFor, type Router } from '../helpers/processes.js';
import { sha256Hex } from '../unit/auth/jwks-server.js';

const dir = tempDir('ir-modules-');
const { hook: HOOK, preload: PRELOAD } = writeModuleLoggers(dir);

const routers: Router[] = [];
afterAll(async () => {
  await Promise.all(routers.map((r) => r.kill()));
  rmSync(dir, { recursive: true, force: true });
});

/** The packages of node_modules each process of a router loaded from its start to its exit, by pid: the primary's and the workers'. */
async function packagesLoaded(name: string, env: Record<string, string>): Promise<{ primary: Set<string>; workers: Set<string>[] }> {
  const log = join(dir, `${name}.log`);
  writeFileSync(log, '');
  const router = await startRouter(resourcesFor([{ name: 'pod-a', port: 9 }]), {
    workers: 2,
    env: { NODE_OPTIONS: `--no-warnings --require ${PRELOAD} --experimental-loader ${HOOK}`, MODULES_LOG: log, ...env },
  });
  routers.push(router);
  const workerPids = await waitFor('two workers', () => { const p = childPids(router.pid); return p.length === 2 ? p : null; });
  expect(await router.kill()).toBe(0);
  const byPid = new Map<number, Set<string>>();
  for (const line of readFileSync(log, 'utf8').split('\n')) {
    const m = /^(\d+) (.*)$/.exec(line);
    if (m === null) continue;
    const pkg = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(m[2]!)?.[1] ?? (m[2]!.includes('/dist/worker/worker.js') ? '(worker.js)' : null);
    if (pkg === null) continue;
    const set = byPid.get(Number(m[1])) ?? new Set<string>();
    set.add(pkg);
    byPid.set(Number(m[1]), set);
  }
  return { primary: byPid.get(router.pid) ?? new Set(), workers: workerPids.map((p) => byPid.get(p) ?? new Set()) };
}

describe('packages each process of the built router loads', () => {
  it('with neither an auth file nor a scheduler file: no jose, no ioredis anywhere, no yaml in a worker; the primary reads the resources with yaml', async () => {
    const { primary, workers } = await packagesLoaded('plain', {});
    expect(primary.has('yaml')).toBe(true);
    expect(primary.has('jose')).toBe(false);
    expect(primary.has('ioredis')).toBe(false);
    for (const w of workers) {
      expect(w.has('(worker.js)')).toBe(true);
      expect(w.has('uWebSockets.js') || w.has('@btc-vision/uwebsockets.js')).toBe(true);
      expect([...w].filter((p) => p === 'jose' || p === 'yaml' || p === 'ioredis')).toEqual([]);
    }
  });

  it('with an auth file: the workers load jose and no yaml, the primary yaml and no jose; with a scheduler file too, the workers load yaml', async () => {
    const auth = join(dir, 'auth.yaml');
    writeFileSync(auth, `apiKeys:\n  - { name: team-a, sha256: "${sha256Hex('key-a')}" }\n`);
    const scheduler = join(dir, 'scheduler.yaml');
    writeFileSync(scheduler, 'scorers:\n  least-request: 1\n');
    const { primary, workers } = await packagesLoaded('configured', { ROUTER_AUTH_CONFIG: auth, ROUTER_SCHEDULER_CONFIG: scheduler });
    expect(primary.has('yaml')).toBe(true);
    expect(primary.has('jose')).toBe(false);
    for (const w of workers) {
      expect(w.has('jose')).toBe(true);
      expect(w.has('yaml')).toBe(true);
      expect(w.has('ioredis')).toBe(false);
    }
    const authOnly = await packagesLoaded('auth-only', { ROUTER_AUTH_CONFIG: auth });
    for (const w of authOnly.workers) {
      expect(w.has('jose')).toBe(true);
      expect(w.has('yaml')).toBe(false);
    }
  });
});
