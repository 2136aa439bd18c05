/**
 * Transpiles the local-mode limiter modules (TS -> ESM JS, no type check) into a temp directory,
 * so plain-JS fixtures run by `node` can import them without a full build of the project
 * (other modules may be mid-change) and without depending on a stale dist/.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { transpileDir } from '../../helpers/transpile.js';

const SRC = new URL('../../../src/ratelimit/', import.meta.url).pathname;

/** The modules the fixtures import and everything they import at runtime. */
const MODULES = [
  'limiter',
  'windows',
  'decision-codec',
  'counter-store',
  'ipc-protocol',
  'limiter-errors',
  'token-amounts',
  'lease-book',
  'held-leases',
  'local-limit-host',
  'local-limit-client',
];

export interface CompiledRatelimit {
  /** Directory holding `<module>.js` for every module above. */
  dir: string;
  remove(): Promise<void>;
}

export async function compileRatelimit(): Promise<CompiledRatelimit> {
  const root = await mkdtemp(join(tmpdir(), 'rl-ipc-'));
  const dir = transpileDir(SRC, join(root, 'ratelimit'), MODULES);
  return { dir, remove: () => rm(root, { recursive: true, force: true }) };
}
