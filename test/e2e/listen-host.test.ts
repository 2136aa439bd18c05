/**
 * `--host ::` where IPv6 is missing. A kernel without IPv6 (booted with ipv6.disable=1) cannot be
 * made here: a preloaded shim that refuses IPv6 sockets (EAFNOSUPPORT, as such a kernel does)
 * stands for it, for the router and its health check alike. A network namespace with IPv6
 * turned off (disable_ipv6=1, as some container runtimes set it) is real, where unprivileged
 * namespaces can be made.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, test } from 'vitest';
import {
  CLI, ROOT, resourcesFor, spawnProcess, startProcess, startRouter, tempDir, waitFor, writeFile, type Proc, type Router,
} from '../helpers/processes.js';
import { serverPort } from '../helpers/ports.js';

const HEALTHCHECK = join(ROOT, 'dist/healthcheck.js');

/** Refuses every IPv6 socket as a kernel without IPv6 does; everything else goes to libc. */
const NO_IPV6_SHIM = `#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <sys/socket.h>
int socket(int domain, int type, int protocol) {
  static int (*real)(int, int, int);
  if (domain == AF_INET6) { errno = EAFNOSUPPORT; return -1; }
  if (real == 0) real = (int (*)(int, int, int)) dlsym(RTLD_NEXT, "socket");
  return real(domain, type, protocol);
}
`;

/** The shim built as a shared object, or null where there is no C compiler. */
function buildShim(): string | null {
  if (spawnSync('gcc', ['--version']).status !== 0) return null;
  const dir = tempDir('ir-no-ipv6-');
  writeFile(join(dir, 'no-ipv6.c'), NO_IPV6_SHIM);
  const r = spawnSync('gcc', ['-shared', '-fPIC', '-o', join(dir, 'no-ipv6.so'), join(dir, 'no-ipv6.c'), '-ldl'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`gcc failed: ${r.stderr}`);
  return join(dir, 'no-ipv6.so');
}

const shim = buildShim();

/** What listening on :: fails with under the shim (EAFNOSUPPORT when it takes), '' without a shim. */
function codeUnderShim(): string {
  if (shim === null) return '';
  const r = spawnSync(process.execPath, ['-e', "require('net').createServer().listen(0, '::').on('error', (e) => { console.log(e.code); process.exit(0); })"],
    { encoding: 'utf8', env: { ...process.env, LD_PRELOAD: shim }, timeout: 10_000 });
  return r.stdout.trim();
}
const shimCode = codeUnderShim();

// Where a C compiler exists, the shim must take: else the tests below would be skipped unnoticed.
test.skipIf(shim === null)('the shim refuses IPv6 sockets, as a kernel without IPv6 does', () => {
  expect(shimCode).toBe('EAFNOSUPPORT');
});

describe.skipIf(shimCode !== 'EAFNOSUPPORT')('--host :: on a kernel without IPv6 (IPv6 sockets refused)', () => {
  const env = { LD_PRELOAD: shim! };
  let router: Router;

  beforeAll(async () => {
    // startRouter's own --host 127.0.0.1 comes first; the last --host wins.
    router = await startRouter(resourcesFor([{ name: 'pod-a', port: 1 }]), { workers: 2, args: ['--host', '::'], env });
  }, 90_000); // past startRouter's own 60 s wait, so a router that exits is reported with its output
  afterAll(async () => {
    await router?.kill();
  });

  it('starts on 0.0.0.0 instead, saying so in one ops-log line, and serves on IPv4', async () => {
    await waitFor('the ready line', () => router.stderr().includes(`2 workers listening on 0.0.0.0:${router.port}`), 5000);
    const lines = router.stderr().split('\n').filter((l) => l.includes('needs IPv6'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/ warn \[primary \d+\] start: host :: \(--host, ROUTER_HOST\) needs IPv6, which this kernel does not have \(listening on :: failed: EAFNOSUPPORT\): listening on 0\.0\.0\.0 \(every IPv4 interface\) instead$/);
    expect((await fetch(`${router.url}/healthz`)).status).toBe(200);
  });

  it('the image health check asks 127.0.0.1 and finds the router healthy', async () => {
    const p = startProcess([HEALTHCHECK, String(router.pid)], env, { name: 'healthcheck' });
    expect({ code: await p.exited, stderr: p.stderr() }).toEqual({ code: 0, stderr: '' });
  });
});

describe.skipIf(shimCode !== 'EAFNOSUPPORT')('another IPv6 address on a kernel without IPv6 (IPv6 sockets refused)', () => {
  it('stops the router (exit 2) with a message naming the address and the missing IPv6, and no fallback', async () => {
    const file = join(tempDir(), 'resources.yaml');
    writeFile(file, resourcesFor([{ name: 'pod-a', port: 1 }]));
    const port = await serverPort();
    for (const host of ['::1', 'fd00::5']) {
      const p = startProcess([CLI, '--resources', file, '--host', host, '--port', String(port), '--workers', '1'],
        { LD_PRELOAD: shim!, ACCESS_LOG_ENABLED: 'false' }, { name: `router on ${host}` });
      expect(await p.exited).toBe(2);
      expect(p.stderr()).toContain(`error [primary ${p.pid}] exit: cannot start: ${host}:${port}: this kernel has no IPv6 (EAFNOSUPPORT): `
        + 'give an IPv4 address, or :: (which listens on 0.0.0.0 where there is no IPv6) (--host); exit 2');
    }
  });
});

/** Whether this machine lets an unprivileged process make user and network namespaces. */
const netns = spawnSync('unshare', ['-Urn', 'ip', 'link', 'set', 'lo', 'up']).status === 0
  && spawnSync('nsenter', ['--version']).status === 0;

describe.skipIf(!netns)('--host :: in a network namespace with IPv6 turned off (disable_ipv6=1)', () => {
  let router: Proc;
  let port: number;
  /** Runs a command in the router's namespaces. */
  const inside = (args: string[]) => spawnSync('nsenter', ['-t', String(router.pid), '-U', '-n', '--preserve-credentials', '--', ...args], { encoding: 'utf8', timeout: 10_000 });

  beforeAll(async () => {
    const file = join(tempDir(), 'resources.yaml');
    writeFile(file, resourcesFor([{ name: 'pod-a', port: 1 }]));
    port = await serverPort();
    const setup = 'ip link set lo up && for i in all default lo; do echo 1 > /proc/sys/net/ipv6/conf/$i/disable_ipv6; done && exec "$@"';
    router = spawnProcess('unshare', ['-Urn', 'sh', '-c', setup, 'sh', process.execPath, CLI, '--resources', file, '--host', '::', '--port', String(port), '--workers', '1'],
      { ACCESS_LOG_ENABLED: 'false', ROUTER_DRAIN_DELAY: '0' }, { name: 'router in a network namespace' });
    await waitFor('router to be ready', () => {
      if (router.child.exitCode !== null) throw new Error(`router exited ${router.child.exitCode}: ${router.stderr()}`);
      return inside([process.execPath, '-e', `fetch('http://127.0.0.1:${port}/readyz').then((r) => process.exit(r.status === 200 ? 0 : 1), () => process.exit(1))`]).status === 0;
    }, 30_000);
  });
  afterAll(async () => {
    await router?.kill();
  });

  it('listens on :: (the kernel has IPv6, the namespace has no IPv6 address): no fallback', async () => {
    expect(inside(['cat', '/proc/net/if_inet6']).stdout).toBe('');
    expect(router.stderr()).not.toContain('needs IPv6');
    await waitFor('the ready line', () => router.stderr().includes(`1 workers listening on :::${port}`), 5000);
  });

  it('the image health check asks 127.0.0.1, which the dual-stack listener answers ([::1] has no address here)', () => {
    const r = inside([process.execPath, HEALTHCHECK, String(router.pid)]);
    expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
  });
});
