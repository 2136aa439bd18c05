/**
 * Transpiles the local-mode limiter modules (TS -> ESM JS, no type check) into a temp directory,
 * so plain-JS fixtures run by `node` can import them without a full build of the project
 * (other modules may be mid-change) and without depending on a stale dist/.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { transpileDir } from '../../helpers/transpile.js';

const SRC = new URL('../../../src/', import.meta.url).pathname;

/** The modules the fixtures import and everything they import at runtime, relative to src/. */
const MODULES = [
  'clock',
  'timers',
  'turn-queue',
  'turn-end',
  'config/resource-types',
  'ratelimit/limiter',
  'ratelimit/windows',
  'ratelimit/note-decisions',
  'ratelimit/decision-codec',
  'ratelimit/errors',
  'errors',
  'ratelimit/token-amounts',
  'ratelimit/local/counter-store',
  'ratelimit/local/ipc-protocol',
  'ratelimit/local/lease-book',
  'ratelimit/local/held-leases',
  'ratelimit/local/refusal-notes',
  'ratelimit/local/limit-host',
  'ratelimit/local/limit-client',
];

export interface CompiledRatelimit {
  /** Directory holding `<module>.js` for every module of ratelimit/local/ (the others beside it as in src/). */
  dir: string;
  remove(): Promise<void>;
}

export async function compileRatelimit(): Promise<CompiledRatelimit> {
  const root = await mkdtemp(join(tmpdir(), 'rl-ipc-'));
  transpileDir(SRC, root, MODULES);
  return { dir: join(root, 'ratelimit', 'local'), remove: () => rm(root, { recursive: true, force: true }) };
}
