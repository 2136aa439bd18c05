// `npm ci` / `npm install` run this (the `prepare` script): `npm run build` when the TypeScript
// compiler is installed (a development install); nothing when it is not (`npm ci --omit=dev`,
// where dist/ comes with the package or from a build stage, as in deploy/Dockerfile).
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';

try {
  createRequire(import.meta.url).resolve('typescript/package.json');
} catch {
  process.stderr.write('inference-router: TypeScript is not installed (npm ci --omit=dev?); not building dist/\n');
  process.exit(0);
}
// npm sets npm_execpath to its own CLI when it runs a script.
const npm = process.env.npm_execpath;
const r = npm
  ? spawnSync(process.execPath, [npm, 'run', 'build'], { stdio: 'inherit' })
  : spawnSync('npm', ['run', 'build'], { stdio: 'inherit', shell: process.platform === 'win32' });
process.exit(r.status ?? 1);
