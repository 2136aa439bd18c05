/**
 * The router's listen address as the container's health check finds it: from the router
 * process's command line and environment (as /proc gives them: NUL-ended strings), parsed by the
 * router's own parseSettings. A fake /proc in a temporary directory stands for the container's.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { connectHost, environment, findRouterPid, healthTarget, processHealthTarget, routerArgs } from '../../../src/config/router-process.js';
import { tempDir } from '../../helpers/processes.js';

const nul = (...parts: string[]): string => parts.map((p) => `${p}\0`).join('');

/** A fake /proc holding the given processes' cmdline (and environ, where given). */
function fakeProc(procs: Record<number, { cmdline: string[]; environ?: string[] }>): string {
  const proc = tempDir('ir-proc-');
  for (const [pid, p] of Object.entries(procs)) {
    mkdirSync(join(proc, pid));
    writeFileSync(join(proc, pid, 'cmdline'), nul(...p.cmdline));
    if (p.environ !== undefined) writeFileSync(join(proc, pid, 'environ'), nul(...p.environ));
  }
  mkdirSync(join(proc, 'self')); // not a pid
  return proc;
}

describe('the router process as /proc shows it', () => {
  it('its own arguments follow the cli.js node runs; another script is no router', () => {
    expect(routerArgs(nul('node', 'dist/cli.js', '--port', '9000'))).toEqual(['--port', '9000']);
    expect(routerArgs(nul('/usr/bin/node', '--max-semi-space-size=16', '/app/dist/cli.js', '--port=9000', '--resources', 'r.yaml')))
      .toEqual(['--port=9000', '--resources', 'r.yaml']);
    expect(routerArgs(nul('node', 'dist/cli.js'))).toEqual([]);
    expect(routerArgs(nul('node', 'dist/healthcheck.js', '1'))).toBeNull();
    expect(routerArgs(nul('/sbin/docker-init', '--', 'node', 'dist/cli.js'))).toBeNull();
    expect(routerArgs('')).toBeNull();
    // Node options with their value as the next argument (a preloaded tracer, a loader): not a script.
    expect(routerArgs(nul('node', '-r', '@opentelemetry/auto-instrumentations-node/register', 'dist/cli.js', '--port', '9000'))).toEqual(['--port', '9000']);
    expect(routerArgs(nul('node', '--import', './otel.mjs', '--require=x', '-C', 'dev', '/app/dist/cli.js'))).toEqual([]);
    expect(routerArgs(nul('node', '/usr/local/bin/inference-router', '--port=9001'))).toEqual(['--port=9001']);
    expect(routerArgs(nul('node', '-r', 'x', 'other.js', 'dist/cli.js'))).toBeNull();
    expect(routerArgs(nul('node', '-e', 'require("./dist/cli.js")'))).toBeNull();
  });

  it('its environment, values with = kept whole', () => {
    expect(environment(nul('ROUTER_PORT=9000', 'A=b=c', 'EMPTY=', 'junk'))).toEqual({ ROUTER_PORT: '9000', A: 'b=c', EMPTY: '' });
  });

  it('the port is found whichever way it was given, as the router parses it: --port N, --port=N, ROUTER_PORT, else 8080', () => {
    const r = ['--resources', 'r.yaml'];
    expect(healthTarget([...r, '--port', '9001'], {}).url).toBe('http://127.0.0.1:9001/healthz');
    expect(healthTarget([...r, '--port=9002'], { ROUTER_PORT: '9999' }).port).toBe(9002); // the flag wins
    expect(healthTarget(r, { ROUTER_PORT: '9003' }).port).toBe(9003);
    expect(healthTarget(r, {}).port).toBe(8080);
    expect(healthTarget(['--kubernetes', '--port', '9004'], {}).port).toBe(9004);
    expect(healthTarget(['--port', '9005', '--port', '9006', ...r], {}).port).toBe(9006); // the last one, as the router takes it
    expect(healthTarget([...r, '--host', '10.1.2.3', '--port', '9007'], {}).url).toBe('http://10.1.2.3:9007/healthz');
    expect(healthTarget(r, { ROUTER_HOST: '::' }).url).toBe('http://127.0.0.1:8080/healthz');
  });

  it('a wildcard listen address is asked on IPv4 loopback (`::` too: the router listens there dual-stack, or on 0.0.0.0 without IPv6); an IPv6 literal in brackets', () => {
    expect(connectHost('0.0.0.0')).toBe('127.0.0.1');
    expect(connectHost('::')).toBe('127.0.0.1');
    expect(connectHost('fd00::5')).toBe('[fd00::5]');
    expect(connectHost('127.0.0.1')).toBe('127.0.0.1');
  });

  it('PID 1 when it is the router (the image ENTRYPOINT), else the lowest pid running it (an init as PID 1)', () => {
    expect(findRouterPid(fakeProc({ 1: { cmdline: ['node', 'dist/cli.js'] }, 7: { cmdline: ['node', 'dist/cli.js'] } }))).toBe(1);
    const withInit = fakeProc({
      1: { cmdline: ['/sbin/docker-init', '--', 'node', 'dist/cli.js', '--port', '9000'] },
      12: { cmdline: ['/usr/bin/node', '--max-semi-space-size=16', '/app/dist/cli.js', '--port', '9000'] },
      7: { cmdline: ['node', 'dist/cli.js', '--port', '9000', '--resources', 'r.yaml'] },
      3: { cmdline: ['sh'] },
    });
    expect(findRouterPid(withInit)).toBe(7);
    expect(processHealthTarget(7, withInit, {}).port).toBe(9000);
    expect(findRouterPid(fakeProc({ 1: { cmdline: ['sleep', 'infinity'] } }))).toBeNull();
  });

  it("reads the router's environment; the caller's own where it cannot be read", () => {
    const proc = fakeProc({
      1: { cmdline: ['node', 'dist/cli.js', '--resources', 'r.yaml'], environ: ['ROUTER_PORT=9100', 'PATH=/usr/bin'] },
      2: { cmdline: ['node', 'dist/cli.js', '--resources', 'r.yaml'] },
    });
    expect(processHealthTarget(1, proc, { ROUTER_PORT: '1' }).port).toBe(9100);
    expect(processHealthTarget(2, proc, { ROUTER_PORT: '9200' }).port).toBe(9200);
    expect(() => processHealthTarget(3, proc)).toThrow('no process 3 (ENOENT)');
  });
});
