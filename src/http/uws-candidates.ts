/**
 * Which uWebSockets.js native builds can load on a runtime: a pure function of the Node ABI,
 * platform, architecture and C library, so the choice is testable without that runtime.
 *
 * Two builds are installed (package.json):
 * - `@btc-vision/uwebsockets.js` 20.57: Node 20/22/24/25 (ABI 115/127/137/141) on linux x64/arm64,
 *   darwin x64/arm64 and win32 x64; its linux binaries need glibc >= 2.38.
 * - `uWebSockets.js` (alias of `@trufflesuite/uws-js-unofficial` 20.30): Node 20 (ABI 115) on
 *   glibc linux x64/arm64/arm, darwin and win32; loads on older glibc (2.36 tested).
 * Neither ships a musl (Alpine) binary.
 */

/** The runtime facts the choice depends on. `glibc`: "2.36"; null on musl Linux and off Linux. */
export interface UwsRuntime {
  readonly abi: number;
  readonly platform: string;
  readonly arch: string;
  readonly glibc: string | null;
}

export interface UwsCandidate {
  /** Name in logs and in the build_info metric, e.g. "uws-20.57". */
  readonly build: string;
  /** Package to resolve (its main file's directory is the base of `file`). */
  readonly packageName: string;
  /** The native binary, relative to the directory of the package's main file. */
  readonly file: string;
}

export interface UwsChoice {
  /** Builds to try, best first. */
  readonly candidates: readonly UwsCandidate[];
  /** Why each other build does not fit this runtime. */
  readonly skipped: readonly string[];
}

interface UwsBuild {
  readonly build: string;
  readonly packageName: string;
  readonly dir: string;
  readonly abis: readonly number[];
  readonly targets: readonly string[];
  /** Minimum glibc of its linux binaries. */
  readonly minGlibc: readonly [number, number];
}

export const UWS_BUILDS: readonly UwsBuild[] = [
  {
    build: 'uws-20.57',
    packageName: '@btc-vision/uwebsockets.js',
    dir: '',
    abis: [115, 127, 137, 141],
    targets: ['linux-x64', 'linux-arm64', 'darwin-x64', 'darwin-arm64', 'win32-x64'],
    minGlibc: [2, 38],
  },
  {
    build: 'uws-20.30',
    packageName: 'uWebSockets.js',
    dir: '../binaries/',
    abis: [115],
    targets: ['linux-x64', 'linux-arm64', 'linux-arm', 'darwin-x64', 'darwin-arm64', 'win32-x64'],
    minGlibc: [2, 17],
  },
];

/** "2.36" -> [2, 36]; null when unparsable. */
export function parseGlibc(version: string | null): [number, number] | null {
  if (version === null) return null;
  const m = /^(\d+)\.(\d+)/.exec(version);
  return m === null ? null : [Number(m[1]), Number(m[2])];
}

function atLeast(v: readonly [number, number], min: readonly [number, number]): boolean {
  return v[0] > min[0] || (v[0] === min[0] && v[1] >= min[1]);
}

export function libcName(rt: UwsRuntime): string {
  if (rt.platform !== 'linux') return rt.platform;
  return rt.glibc === null ? 'musl (no glibc)' : `glibc ${rt.glibc}`;
}

/** The builds whose binary fits `rt`, best first, and why the others do not. */
export function chooseUws(rt: UwsRuntime): UwsChoice {
  const candidates: UwsCandidate[] = [];
  const skipped: string[] = [];
  const target = `${rt.platform}-${rt.arch}`;
  for (const b of UWS_BUILDS) {
    const name = `${b.build} (${b.packageName})`;
    if (!b.targets.includes(target)) {
      skipped.push(`${name}: no binary for ${target}`);
      continue;
    }
    if (!b.abis.includes(rt.abi)) {
      skipped.push(`${name}: no binary for Node ABI ${rt.abi} (has ${b.abis.join(', ')})`);
      continue;
    }
    if (rt.platform === 'linux') {
      const glibc = parseGlibc(rt.glibc);
      if (glibc === null) {
        skipped.push(`${name}: its linux binary needs glibc, this system has ${libcName(rt)}`);
        continue;
      }
      if (!atLeast(glibc, b.minGlibc)) {
        skipped.push(`${name}: its linux binary needs glibc >= ${b.minGlibc.join('.')}, this system has ${rt.glibc}`);
        continue;
      }
    }
    candidates.push({ build: b.build, packageName: b.packageName, file: `${b.dir}uws_${rt.platform}_${rt.arch}_${rt.abi}.node` });
  }
  return { candidates, skipped };
}
