/**
 * Vitest runs the TypeScript sources, but piscina threads load plain JavaScript. This compiles
 * src/tokens/*.ts (transpile only, no type check: a few ms) into a directory under
 * node_modules/.cache, where `gpt-tokenizer` still resolves, and returns the worker file.
 * Always built from the current sources, so it cannot run a stale dist/ build.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { transpileDir } from '../../helpers/transpile.js';

const root = new URL('../../../', import.meta.url);

const outDir = fileURLToPath(new URL(`node_modules/.cache/inference-router-tokens-test/${process.pid}/`, root));

export function compiledTaskFile(): string {
  transpileDir(fileURLToPath(new URL('src/tokens/', root)), outDir);
  writeFileSync(`${outDir}package.json`, '{"type":"module"}\n');
  return `${outDir}tokenize-task.js`;
}

/** A worker that loads, answers the warm-up, then never answers (spins forever): exercises the hard stop. */
export function hangingTaskFile(): string {
  compiledTaskFile();
  const file = `${outDir}hanging-task.js`;
  writeFileSync(file, "export default function hang(task) { if (task.texts[0] === 'warm up') return 1; for (;;) { /* never answers */ } }\n");
  return file;
}

export function removeCompiled(): void {
  rmSync(outDir, { recursive: true, force: true });
}
