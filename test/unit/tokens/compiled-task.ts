/**
 * Vitest runs the TypeScript sources, but piscina threads load plain JavaScript. This compiles
 * src/tokens/*.ts and the base-layer modules they import (BASE_MODULES; transpile only, no type
 * check: a few ms) into a directory under node_modules/.cache laid out as src/ is, where
 * `gpt-tokenizer` still resolves, and returns the worker file. Always built from the current
 * sources, so it cannot run a stale dist/ build.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { transpileDir } from '../../helpers/transpile.js';

const root = new URL('../../../', import.meta.url);

const outDir = fileURLToPath(new URL(`node_modules/.cache/inference-router-tokens-test/${process.pid}/`, root));

/** Modules outside src/tokens/ that its files import, relative to src/. */
const BASE_MODULES = ['ascii-text', 'two-generations'];

export function compiledTaskFile(): string {
  transpileDir(fileURLToPath(new URL('src/tokens/', root)), `${outDir}tokens/`);
  transpileDir(fileURLToPath(new URL('src/', root)), outDir, BASE_MODULES);
  writeFileSync(`${outDir}package.json`, '{"type":"module"}\n');
  return `${outDir}tokens/tokenize-task.js`;
}

/** Modules outside src/api/ and src/tokens/ that api/parse-task.ts imports, relative to src/. */
const PARSE_BASE_MODULES = ['ascii-text', 'byte-view', 'errors', 'two-generations'];

/** src/api/parse-task.ts compiled as compiledTaskFile() compiles the tokenizer's task (beside it, sharing its tokens/). */
export function compiledParseTaskFile(): string {
  compiledTaskFile();
  transpileDir(fileURLToPath(new URL('src/api/', root)), `${outDir}api/`);
  transpileDir(fileURLToPath(new URL('src/', root)), outDir, PARSE_BASE_MODULES);
  return `${outDir}api/parse-task.js`;
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
