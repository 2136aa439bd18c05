/**
 * What this process runs: the router's version, the Node.js version and the uWebSockets.js build
 * that loaded (set by the loader, src/http/uws.ts). Read by the `inference_router_build_info` metric.
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

function packageVersion(): string {
  try {
    return String((require('../package.json') as { version?: unknown }).version ?? 'unknown');
  } catch {
    return 'unknown';
  }
}

export const buildInfo = {
  version: packageVersion(),
  node: process.version,
  /** "uws-20.57", "uws-20.30"; "none" until the loader ran. */
  uws: 'none',
};
