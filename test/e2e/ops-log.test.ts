import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postFresh, resourcesFor, ROOT, startMock, startRouter, waitFor, type MockBackend, childPids } from '../helpers/processes.js';

const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

interface Line { time: string; level: string; process: string; pid: number; event: string; message: string; [k: string]: unknown }

/** Every stderr line, each of which must be one JSON object. */
function lines(stderr: string): Line[] {
  return stderr.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Line);
}

describe('operational log on stderr', () => {
  let a: MockBackend;
  beforeAll(async () => {
    a = await startMock('pod-a');
  });
  afterAll(async () => {
    await a?.kill();
  });

  it('json (following ACCESS_LOG_FORMAT): start-up, reloads, worker restart, drain and exit, one event per line', async () => {
    const router = await startRouter(resourcesFor([{ name: 'pod-a', port: a.port }]), { workers: 2, env: { ACCESS_LOG_FORMAT: 'json' } });
    let log = lines(router.stderr());
    const start = log.find((l) => l.event === 'start')!;
    expect(start).toMatchObject({ level: 'info', process: 'primary', pid: router.pid, version: VERSION, workers: 2, host: '127.0.0.1', port: router.port, source: 'file', resources: router.resourcesFile, auth: false });
    expect(start.message).toContain(`inference-router ${VERSION}`);
    // The runtime and the uWS build that loaded, as the build_info metric has them.
    expect(start).toMatchObject({ node: process.version, uws: expect.stringMatching(/^uws-20\.\d+$/) });
    expect(start.message).toContain(`, Node ${process.version} with uWebSockets.js build ${start.uws}, resources from file `);
    expect(log.find((l) => l.event === 'resources')).toMatchObject({ routes: ['default/sf-route'], servers: ['default/sf-server'], snapshot: 1 });
    expect(log.find((l) => l.event === 'limits')).toMatchObject({ local: 'leases', redis: [] });
    await waitFor('the ready line', () => lines(router.stderr()).some((l) => l.event === 'ready'));

    // A reload applied, then one rejected with its reason.
    writeFileSync(router.resourcesFile, resourcesFor([{ name: 'pod-a', port: a.port }], { model: 'renamed' }).replace(/sf-route/g, 'renamed-route'));
    const applied = await waitFor('the applied reload', () => lines(router.stderr()).find((l) => l.event === 'reload' && l.applied === true), 5000);
    expect(applied).toMatchObject({ level: 'info', routes: ['default/renamed-route'], snapshot: 2 });
    writeFileSync(router.resourcesFile, 'kind: Nonsense\n');
    const rejected = await waitFor('the rejected reload', () => lines(router.stderr()).find((l) => l.event === 'reload' && l.applied === false), 5000);
    expect(rejected.level).toBe('warn');
    expect(rejected.message).toContain('keeping the last good config');
    expect(rejected.message).toContain('Nonsense');

    // A worker dies: its exit and its replacement are logged.
    const [victim] = childPids(router.pid);
    process.kill(victim, 'SIGKILL');
    const restarted = await waitFor('the restart line', () => lines(router.stderr()).find((l) => l.event === 'worker' && l.replaces === victim), 10_000);
    expect(restarted.worker).toEqual(expect.any(Number));
    expect(lines(router.stderr()).find((l) => l.event === 'worker' && l.worker === victim)).toMatchObject({ level: 'warn', signal: 'SIGKILL' });
    expect((await postFresh(`${router.url}/v1/completions`, { model: 'renamed', prompt: 'x' })).status).toBe(200);

    expect(await router.kill('SIGTERM')).toBe(0);
    log = lines(router.stderr());
    const drain = log.findIndex((l) => l.event === 'drain');
    const exit = log.findIndex((l) => l.event === 'exit');
    expect(drain).toBeGreaterThan(0);
    expect(exit).toBe(log.length - 1);
    expect(log[exit]).toMatchObject({ process: 'primary', code: 0 });
    expect(log[drain]).toMatchObject({ delayMs: 0, timeoutMs: 30_000 });
  });

  it('text by default; a resources file without a route starts with a warning', async () => {
    const serverOnly = resourcesFor([{ name: 'pod-a', port: a.port }]).split('---')[0];
    const router = await startRouter(serverOnly, { workers: 1, env: { ROUTER_LOG_FORMAT: 'text' } });
    try {
      const text = router.stderr();
      const start = text.split('\n').find((l) => / info \[primary \d+\] start: /.test(l));
      expect(start).toContain(`inference-router ${VERSION} starting: 1 workers, listen 127.0.0.1:${router.port}`);
      expect(start).toMatch(/, auth off, tracing off$/);
      expect(text).toMatch(/ warn \[primary \d+\] resources: no ModelRoute in .*resources\.yaml/);
      // A ModelServer no route targets is not used: named apart, its pod neither scraped nor connected to.
      expect(text).toMatch(/resources loaded from file .* 0 routes \[\], 0 servers \[\]; 1 ModelServers no route served targets, not used \(their pods neither scraped nor connected to\) \[default\/sf-server\]\n/);
      for (const l of text.split('\n').filter(Boolean)) expect(l).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z (info|warn|error) \[(primary|worker) \d+\] [a-z]+: /);
    } finally {
      await router.kill();
    }
  });
});
