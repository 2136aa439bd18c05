import { createRequire } from 'node:module';
import type * as UWS from 'uWebSockets.js';

const require = createRequire(import.meta.url);

/**
 * Loads uWebSockets.js and checks that its native build loaded. The package silently falls
 * back to a slow JavaScript server when the binary does not fit this Node/glibc; we refuse to
 * run on that unless ROUTER_ALLOW_UWS_FALLBACK=true.
 */
export function loadUws(allowFallback: boolean): typeof UWS {
  const uws = require('uWebSockets.js') as typeof UWS;
  const native = Object.keys(require.cache).some((k) => k.includes('uWebSockets.js') && k.endsWith('.node'))
    || Object.keys(require.cache).some((k) => /uws_[a-z0-9]+_[a-z0-9]+_\d+\.node$/.test(k));
  if (!native && !allowFallback) {
    throw new Error(
      `uWebSockets.js native build did not load for Node ${process.version} (${process.platform}-${process.arch}, ABI ${process.versions.modules}); ` +
        'it fell back to a slow JavaScript server. Use Node 20 on glibc Linux, or set ROUTER_ALLOW_UWS_FALLBACK=true to run anyway.',
    );
  }
  return uws;
}
