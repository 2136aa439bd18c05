import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type * as UWS from 'uWebSockets.js';
import { buildInfo } from '../build-info.js';
import { DEFAULT_MAX_HEADER_BYTES } from '../config/settings.js';
import { chooseUws, libcName, type UwsRuntime } from './uws-candidates.js';

const require = createRequire(import.meta.url);

/** This process's Node ABI, platform, architecture and C library (glibc version, or null on musl). */
export function currentUwsRuntime(): UwsRuntime {
  let glibc: string | null = null;
  if (process.platform === 'linux') {
    const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header;
    glibc = header?.glibcVersionRuntime ?? null;
  }
  return { abi: Number(process.versions.modules), platform: process.platform, arch: process.arch, glibc };
}

/** Directory of a package's main file (resolves without running it). */
function mainDir(packageName: string): string {
  return dirname(require.resolve(packageName));
}

/**
 * Loads the first uWebSockets.js native build that fits this runtime (src/http/uws-candidates.ts).
 * The binaries are required directly, never through a package's index, which may fall back to a
 * slow JavaScript server silently. `maxHeaderBytes` (ROUTER_MAX_HEADER_BYTES) is the largest request
 * head the build that reads it accepts. When none loads, throws a message naming the runtime, the C
 * library and what to run instead. The JavaScript fallback of the `uWebSockets.js` package is never
 * run: it cannot carry the router's answers (settings.ts, refuseUwsFallback).
 */
export function loadUws(rt: UwsRuntime = currentUwsRuntime(), maxHeaderBytes = DEFAULT_MAX_HEADER_BYTES): typeof UWS {
  // Read by the 20.57 build's HTTP parser when it loads (the 20.30 build has fixed limits: 4 KiB for a head that arrives in pieces);
  // child processes inherit it.
  process.env.UWS_HTTP_MAX_HEADERS_SIZE = String(maxHeaderBytes);
  const choice = chooseUws(rt);
  const failures = [...choice.skipped];
  for (const c of choice.candidates) {
    try {
      const uws = require(join(mainDir(c.packageName), c.file)) as typeof UWS;
      buildInfo.uws = c.build;
      return uws;
    } catch (err) {
      failures.push(`${c.build} (${c.packageName}): ${(err as Error).message.split('\n')[0]}`);
    }
  }
  throw new Error(
    `no uWebSockets.js native build loads on Node ${process.version} (ABI ${rt.abi}, ${rt.platform}-${rt.arch}) with ${libcName(rt)}:\n` +
      failures.map((f) => `  - ${f}\n`).join('') +
      'Run Node 24 or 22 on linux x64/arm64 with glibc >= 2.38 (Debian 13, Ubuntu 24.04, the node:24-trixie-slim image); ' +
      'Node 20 (past its end of life, 2026-04-30) loads there and on an older glibc; Node 26 and later have no build yet; musl (Alpine) is not supported.',
  );
}
