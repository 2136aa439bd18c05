/**
 * The choice of uWebSockets.js build by runtime (Node ABI, platform, arch, C library), the loader's
 * refusal message, and that the table of builds matches the binaries actually installed.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { chooseUws, parseGlibc, UWS_BUILDS, type UwsRuntime } from '../../../src/http/uws-candidates.js';
import { currentUwsRuntime, loadUws } from '../../../src/http/uws.js';
import { buildInfo } from '../../../src/build-info.js';

const require = createRequire(import.meta.url);
const linux = (abi: number, glibc: string | null, arch = 'x64'): UwsRuntime => ({ abi, platform: 'linux', arch, glibc });
const builds = (rt: UwsRuntime): string[] => chooseUws(rt).candidates.map((c) => c.build);

describe('chooseUws', () => {
  test.each([
    ['Node 20, glibc 2.36 (Debian 12)', linux(115, '2.36'), ['uws-20.30']],
    ['Node 20, glibc 2.39 (Ubuntu 24.04)', linux(115, '2.39'), ['uws-20.57', 'uws-20.30']],
    ['Node 22, glibc 2.38', linux(127, '2.38'), ['uws-20.57']],
    ['Node 24, glibc 2.41 (Debian 13)', linux(137, '2.41'), ['uws-20.57']],
    ['Node 25, glibc 2.41', linux(141, '2.41'), ['uws-20.57']],
    ['Node 24 arm64, glibc 2.41', linux(137, '2.41', 'arm64'), ['uws-20.57']],
    ['Node 24, glibc 2.36', linux(137, '2.36'), []],
    ['Node 22, glibc 2.100 (numeric, not string, compare)', linux(127, '2.100'), ['uws-20.57']],
    ['Node 24 on musl (Alpine)', linux(137, null), []],
    ['Node 20 on musl (Alpine)', linux(115, null), []],
    ['Node 18', linux(108, '2.41'), []],
    ['an unknown future ABI', linux(999, '2.41'), []],
    ['Node 24 on macOS arm64', { abi: 137, platform: 'darwin', arch: 'arm64', glibc: null }, ['uws-20.57']],
    ['Node 20 on Windows x64', { abi: 115, platform: 'win32', arch: 'x64', glibc: null }, ['uws-20.57', 'uws-20.30']],
    ['Node 20 on linux arm (32-bit)', linux(115, '2.36', 'arm'), ['uws-20.30']],
  ])('%s', (_name, rt, expected) => {
    expect(builds(rt)).toEqual(expected);
  });

  test('names the binary of the runtime, relative to the package main file', () => {
    expect(chooseUws(linux(127, '2.39', 'arm64')).candidates).toEqual([
      { build: 'uws-20.57', packageName: '@btc-vision/uwebsockets.js', file: 'uws_linux_arm64_127.node' },
    ]);
    expect(chooseUws(linux(115, '2.31')).candidates).toEqual([
      { build: 'uws-20.30', packageName: 'uWebSockets.js', file: '../binaries/uws_linux_x64_115.node' },
    ]);
  });

  test('says why each build was skipped', () => {
    const { skipped } = chooseUws(linux(137, '2.36'));
    expect(skipped).toEqual([
      'uws-20.57 (@btc-vision/uwebsockets.js): its linux binary needs glibc >= 2.38, this system has 2.36',
      'uws-20.30 (uWebSockets.js): no binary for Node ABI 137 (has 115)',
    ]);
    expect(chooseUws(linux(137, null)).skipped[0]).toContain('needs glibc, this system has musl');
    expect(chooseUws({ abi: 137, platform: 'freebsd', arch: 'x64', glibc: null }).skipped[0]).toContain('no binary for freebsd-x64');
  });

  test('parseGlibc', () => {
    expect(parseGlibc('2.36')).toEqual([2, 36]);
    expect(parseGlibc('2.41.9000')).toEqual([2, 41]);
    expect(parseGlibc(null)).toBeNull();
    expect(parseGlibc('unknown')).toBeNull();
  });

  test('every binary the table names is installed', () => {
    const missing: string[] = [];
    for (const b of UWS_BUILDS) {
      const base = dirname(require.resolve(b.packageName));
      for (const target of b.targets) {
        const [platform, arch] = target.split('-');
        for (const abi of b.abis) {
          const rt: UwsRuntime = { abi, platform, arch, glibc: '2.99' };
          const c = chooseUws(rt).candidates.find((x) => x.build === b.build)!;
          if (!existsSync(join(base, c.file))) missing.push(`${b.packageName}/${c.file}`);
        }
      }
    }
    expect(missing).toEqual([]);
  });
});

describe('loadUws', () => {
  // loadUws sets the header limit the build reads; the process is shared with the next test files.
  const headerLimit = process.env.UWS_HTTP_MAX_HEADERS_SIZE;
  afterAll(() => {
    if (headerLimit === undefined) delete process.env.UWS_HTTP_MAX_HEADERS_SIZE;
    else process.env.UWS_HTTP_MAX_HEADERS_SIZE = headerLimit;
  });

  test('loads the first fitting native build on this runtime and records it', () => {
    const rt = currentUwsRuntime();
    const first = chooseUws(rt).candidates[0];
    expect(first, `no build fits ${JSON.stringify(rt)}`).toBeDefined();
    const uws = loadUws();
    expect(typeof uws.App).toBe('function');
    expect(buildInfo.uws).toBe(first.build);
  });

  test('refuses with the runtime, the C library and what to install when no build fits', () => {
    const musl = { ...currentUwsRuntime(), glibc: null };
    expect(() => loadUws(musl)).toThrow(/no uWebSockets\.js native build loads on Node v\d+\.\d+\.\d+ \(ABI \d+, linux-\w+\) with musl/);
    expect(() => loadUws(musl)).toThrow(/glibc >= 2\.38 .*node:24-trixie-slim.*musl \(Alpine\) is not supported\.$/s);
  });

  test('a fitting build whose binary fails to load is reported, not silently replaced', () => {
    // Claims Node 22 (ABI 127) on glibc 2.99: where the real glibc is older than 2.38 (this
    // machine), the 20.57 binary is tried, fails to load, and the loader's error is in the message.
    const real = parseGlibc(currentUwsRuntime().glibc);
    const rt = { ...currentUwsRuntime(), abi: 127, glibc: '2.99' };
    if (process.platform !== 'linux' || real === null || real[0] > 2 || real[1] >= 38) return;
    expect(() => loadUws(rt)).toThrow(/uws-20\.57 \(@btc-vision\/uwebsockets\.js\): .*GLIBC_2\.\d+/);
  });

  test('never runs the JavaScript fallback: with no native build for the runtime, it refuses', () => {
    const none = { ...currentUwsRuntime(), abi: 999 };
    buildInfo.uws = 'none';
    expect(() => loadUws(none)).toThrow(/no binary for Node ABI 999/);
    expect(buildInfo.uws).toBe('none');
  });
});
