import { spawn, spawnSync } from 'node:child_process';
import { connect } from 'node:net';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, startProcess, waitFor, type Proc, childPids, processAlive } from '../helpers/processes.js';
import { serverPort } from '../helpers/ports.js';

const DEMO = join(ROOT, 'dist/examples/demo.js');

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => { s.destroy(); resolve(true); });
    s.once('error', () => resolve(false));
  });
}

/**
 * Starts the demo on free ports below the kernel's ephemeral range (ports.ts; under `wrapper`
 * when given) and waits for its banner. A port found free can still be taken before the demo binds
 * it (another test's server on a port picked the same way): a demo that stops on a port in use is
 * started again on other ports, twice at most. Any other early exit fails with the demo's output.
 */
async function startDemo(wrapper: boolean): Promise<{ proc: Proc; demoPid: number; ports: number[] }> {
  for (let attempt = 1; ; attempt++) {
    const ports = [await serverPort(), await serverPort(), await serverPort()];
    const env = { DEMO_PORT: String(ports[0]), DEMO_POD_PORTS: `${ports[1]},${ports[2]}`, ACCESS_LOG_ENABLED: 'false' };
    // The wrapper is a parent that starts the demo and then is killed without a word to it; it
    // leaves with the demo's exit code if the demo stops first (a demo that did not start).
    const proc = wrapper
      ? startProcess(['-e', `const c = require('node:child_process').spawn(process.execPath, [${JSON.stringify(DEMO)}], { stdio: 'inherit' }); console.log('demo pid ' + c.pid); c.on('exit', (code) => process.exit(code ?? 1)); setInterval(() => {}, 1000);`], env, { name: 'demo wrapper' })
      : startProcess([DEMO], env, { name: 'demo' });
    let exited = false;
    await waitFor('the demo banner', () => {
      exited = proc.child.exitCode !== null;
      return exited || proc.stdout().includes('inference-router demo: router on');
    }, 60_000);
    if (!exited) {
      const demoPid = wrapper ? Number(/demo pid (\d+)/.exec(proc.stdout())![1]) : proc.pid;
      return { proc, demoPid, ports };
    }
    if (attempt < 3 && /is in use by another process/.test(proc.output())) continue;
    throw new Error(`demo exited: ${proc.output()}`);
  }
}

async function expectAllGone(demoPid: number, kids: number[], ports: number[]): Promise<void> {
  await waitFor('the demo and its children to exit', () => !processAlive(demoPid) && kids.every((p) => !processAlive(p)), 15_000);
  for (const p of ports) expect(await portOpen(p), `port ${p}`).toBe(false);
}

/**
 * A scrape of a pod's /metrics that failed other than by a late answer: a pod at a wrong port, or
 * one stopped while the router still runs, refuses at once. A late answer is left out: a machine
 * loaded by other tests can make a pod's first answer late.
 */
const SCRAPE_FAILED = /cannot connect|cannot scrape \S+: (?!no answer within)/;

describe('npm run demo', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)('stops the mocks and the router on %s', async (signal) => {
    const { proc, demoPid, ports } = await startDemo(false);
    const kids = childPids(demoPid);
    expect(kids).toHaveLength(3);
    for (const p of ports) expect(await portOpen(p)).toBe(true);
    expect(await proc.kill(signal)).toBe(0);
    await expectAllGone(demoPid, kids, ports);
  });

  it('on moved ports (DEMO_POD_PORTS) both pods are reached: answered, and their /metrics scraped without a complaint', async () => {
    const { proc, ports } = await startDemo(false);
    const base = `http://127.0.0.1:${ports[0]}`;
    const fresh = async (pod: string): Promise<number> => {
      const line = (await (await fetch(`${base}/metrics`)).text()).split('\n').find((l) => l.startsWith(`inference_router_pod_metrics_fresh{backend_pod="${pod}",pod="${pod}"}`));
      return line === undefined ? 0 : Number(line.split(' ').at(-1));
    };
    try {
      for (let i = 0; i < 4; i++) {
        const r = await fetch(`${base}/v1/completions`, {
          method: 'POST', headers: { 'content-type': 'application/json' }, body: `{"model":"sf-model","prompt":"request ${i}","max_tokens":2}`,
        });
        expect(r.status).toBe(200);
        await r.text();
      }
      // Both workers hold fresh values of both pods: the router reaches each at its moved port.
      await waitFor('fresh metrics of both pods', async () => (await fresh('sf-pod-a')) === 2 && (await fresh('sf-pod-b')) === 2, 15_000);
      expect(proc.output()).not.toMatch(SCRAPE_FAILED);
    } finally {
      expect(await proc.kill('SIGTERM')).toBe(0);
    }
  });

  it('a second demo on the same ports stops at once naming the port, and the first keeps serving', async () => {
    const { proc, ports } = await startDemo(false);
    try {
      const env = { ...process.env, DEMO_PORT: String(ports[0]), DEMO_POD_PORTS: `${ports[1]},${ports[2]}`, ACCESS_LOG_ENABLED: 'false' };
      const second = spawnSync(process.execPath, [DEMO], { encoding: 'utf8', env, timeout: 30_000 });
      expect(second.status).toBe(1);
      expect(second.stderr).toContain(`demo: port ${ports[0]} (the router's) is in use by another process: is a demo already running?`);
      expect(second.stdout).not.toContain('inference-router demo: router on');
      const r = await fetch(`http://127.0.0.1:${ports[0]}/v1/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"sf-model","prompt":"still here","max_tokens":2}',
      });
      expect(r.status).toBe(200);
      await r.text();
    } finally {
      expect(await proc.kill('SIGTERM')).toBe(0);
    }
  });

  it.each([
    ['DEMO_PORT', 'abc', 'DEMO_PORT must be a port from 1 to 65535, got "abc"'],
    ['DEMO_PORT', '70000', 'DEMO_PORT must be a port from 1 to 65535, got "70000"'],
    ['DEMO_POD_PORTS', '18001', 'DEMO_POD_PORTS must be 2 ports from 1 to 65535, comma-separated (e.g. 18001,18002), got "18001"'],
    ['DEMO_POD_PORTS', '18001,x', 'DEMO_POD_PORTS must be 2 ports from 1 to 65535, comma-separated (e.g. 18001,18002), got "18001,x"'],
    ['DEMO_POD_PORTS', '18011,18011', 'the router (DEMO_PORT=8080) and the two pods (DEMO_POD_PORTS=18011,18011) need three different ports'],
    ['DEMO_POD_PORTS', '8080,18002', 'the router (DEMO_PORT=8080) and the two pods (DEMO_POD_PORTS=8080,18002) need three different ports'],
  ])('a bad %s (%s) stops it before it starts anything, naming the variable', (variable, value, message) => {
    const r = spawnSync(process.execPath, [DEMO], { encoding: 'utf8', env: { ...process.env, [variable]: value }, timeout: 30_000 });
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(`demo: ${message}\n`);
    expect(r.stdout).toBe('');
  });

  it('Ctrl-C in a terminal (SIGINT to its whole process group) stops the router, with one signal, before the pods it drains to', async () => {
    const ports = [await serverPort(), await serverPort(), await serverPort()];
    // A process group of its own, as a shell's foreground job has: Ctrl-C signals every process in it.
    const demo = spawn(process.execPath, [DEMO], {
      detached: true,
      env: { ...process.env, DEMO_PORT: String(ports[0]), DEMO_POD_PORTS: `${ports[1]},${ports[2]}`, ACCESS_LOG_ENABLED: 'false' },
    });
    let output = '';
    demo.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    demo.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    const exit = new Promise<number | null>((resolve) => demo.on('exit', (code) => resolve(code)));
    try {
      await waitFor('the demo banner', () => output.includes('inference-router demo: router on') || demo.exitCode !== null, 60_000);
      expect(demo.exitCode, output).toBeNull();
      const kids = childPids(demo.pid!);
      expect(kids).toHaveLength(3);
      const routerPid = kids.find((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('cli.js'));
      expect(routerPid, 'the router among the demo\'s children').toBeDefined();
      process.kill(-demo.pid!, 'SIGINT');
      // The pods are there for the router as long as it drains: a pod seen closed while the router
      // still runs is stopped too early. Watched until the demo has exited, however fast the
      // router drains (an idle one exits within a few tens of milliseconds on a fast machine).
      const closedEarly: string[] = [];
      while (demo.exitCode === null && demo.signalCode === null) {
        const open = [await portOpen(ports[1]), await portOpen(ports[2])];
        // The router is checked after the pods: if it still runs now, it ran when a pod was found closed.
        if (open.includes(false) && processAlive(routerPid!)) closedEarly.push(`pods open: ${open.join(', ')}`);
        await new Promise((r) => setTimeout(r, 2));
      }
      expect(closedEarly, 'a pod closed while the router still ran').toEqual([]);
      expect(await exit).toBe(0);
      await expectAllGone(demo.pid!, kids, ports);
      expect(output).not.toMatch(SCRAPE_FAILED);
      // One signal reached the router: the terminal's went to the demo alone, which stopped it.
      expect(output).toMatch(/drain: draining/);
      expect(output).not.toMatch(/received while a drain is already under way/);
      // Nothing the router warned of, from start to stop (its resources file, say, removed under it while it drained).
      expect(output).not.toMatch(/ warn \[/);
      // Its copy of the resources is gone once it has stopped.
      const resources = /resources from file (\S+\/resources\.yaml)/.exec(output)?.[1];
      expect(resources, 'the resources file the router was started on').toBeDefined();
      expect(existsSync(resources!)).toBe(false);
    } finally {
      if (demo.exitCode === null) process.kill(-demo.pid!, 'SIGKILL');
    }
  });

  it('stops everything when the process that started it goes away', async () => {
    const { proc, demoPid, ports } = await startDemo(true);
    const kids = childPids(demoPid);
    expect(kids).toHaveLength(3);
    await proc.kill('SIGKILL');
    await expectAllGone(demoPid, kids, ports);
  });
});
