/**
 * The one check of the tests that run the build's output (dist/) in a child process: a file that
 * is missing, or older than a source it is made from, would test another tree than this one.
 */
import { existsSync, statSync } from 'node:fs';

const ROOT = new URL('../../', import.meta.url).pathname;

/**
 * The path of `dist/<file>`, or an error naming it when it is missing or older than any of
 * `sources` (paths from the repository's root).
 */
export function builtFile(file: string, ...sources: string[]): string {
  const out = `${ROOT}dist/${file}`;
  const newest = Math.max(...sources.map((s) => statSync(`${ROOT}${s}`).mtimeMs));
  if (!existsSync(out) || statSync(out).mtimeMs < newest) throw new Error(`${out} is missing or older than its source: build first with \`npm run build\``);
  return out;
}
