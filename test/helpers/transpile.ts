/**
 * The one transpile helper of the tests: TypeScript sources -> ESM JavaScript (transpile only, no
 * type check: a few ms), for code that must run as plain JS outside vitest (piscina threads,
 * child processes) without a full build of the project and without a stale dist/.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import ts from 'typescript';

/**
 * Writes `<name>.js` into `outDir` for each `<name>.ts` of `srcDir` (every .ts file when `names`
 * is omitted). Returns `outDir`.
 */
export function transpileDir(srcDir: string, outDir: string, names?: readonly string[]): string {
  mkdirSync(outDir, { recursive: true });
  const files = names === undefined ? readdirSync(srcDir).filter((f) => f.endsWith('.ts')) : names.map((n) => `${n}.ts`);
  for (const file of files) {
    const out = ts.transpileModule(readFileSync(join(srcDir, file), 'utf8'), {
      fileName: file,
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    });
    const target = join(outDir, file.replace(/\.ts$/, '.js'));
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, out.outputText);
  }
  return outDir;
}
