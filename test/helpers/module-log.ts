/**
 * Which modules a Node process loads, for tests that check what a router process loads on demand.
 * Two files in `dir`, each appending `<pid> <module>` lines to the file named by the process's
 * MODULES_LOG environment variable:
 * - `hook`, for `--experimental-loader`: every ES module resolved (its URL); jose is one;
 * - `preload`, for `--require`: at the process's exit, every module in require's cache (its path);
 *   yaml and ioredis are loaded by require.
 * Both pass to child processes through NODE_OPTIONS, which cluster workers inherit.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

export function writeModuleLoggers(dir: string): { hook: string; preload: string } {
  const hook = join(dir, 'module-log-hook.mjs');
  const preload = join(dir, 'module-log-preload.cjs');
  writeFileSync(hook, `
import { appendFileSync } from 'node:fs';
export async function resolve(s, c, next) { const r = await next(s, c); appendFileSync(process.env.MODULES_LOG, process.pid + ' ' + r.url + '\\n'); return r; }
`);
  writeFileSync(preload, `
process.on('exit', () => require('node:fs').appendFileSync(process.env.MODULES_LOG, Object.keys(require.cache).map((k) => process.pid + ' ' + k + '\\n').join('')));
`);
  return { hook, preload };
}
