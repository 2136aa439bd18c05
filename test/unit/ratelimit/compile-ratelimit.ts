/**
 * Transpiles the local-mode limiter modules (TS -> ESM JS, no type check) into a temp directory,
 * so plain-JS fixtures run by `node` can import them without a full build of the project
 * (other modules may be mid-change) and without depending on a stale dist/.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';

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
  const dir = join(root, 'ratelimit');
  await mkdir(dir);
  for (const name of MODULES) {
    const source = await readFile(join(SRC, `${name}.ts`), 'utf8');
    const out = ts.transpileModule(source, {
      fileName: `${name}.ts`,
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    });
    await writeFile(join(dir, `${name}.js`), out.outputText);
  }
  return { dir, remove: () => rm(root, { recursive: true, force: true }) };
}
