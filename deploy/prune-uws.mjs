#!/usr/bin/env node
// Keeps only the uWebSockets.js native binary this runtime loads; deletes every other
// uws_*.node (other platforms, Node ABIs and the build not chosen) from the installed packages.
// Used by deploy/Dockerfile after `npm prune --omit=dev`, on the same Node image as the final stage.
//   node deploy/prune-uws.mjs [--check] [APP_DIR=.]
// APP_DIR holds package.json, node_modules and dist/ (the compiled router). --check: also load the
// kept binary, so an image whose Node or C library fits no build fails to build, not to start.
import { readdirSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const args = process.argv.slice(2);
const check = args.includes('--check');
const app = resolve(args.find((a) => !a.startsWith('--')) ?? '.');
const { chooseUws, UWS_BUILDS } = await import(pathToFileURL(join(app, 'dist/http/uws-candidates.js')).href);
const { currentUwsRuntime } = await import(pathToFileURL(join(app, 'dist/http/uws.js')).href);

const require = createRequire(join(app, 'package.json'));
const rt = currentUwsRuntime();
const choice = chooseUws(rt);
if (choice.candidates.length === 0) {
  console.error(`prune-uws: no uWebSockets.js build fits ${JSON.stringify(rt)}:\n  ${choice.skipped.join('\n  ')}`);
  process.exit(1);
}
const chosen = choice.candidates[0];
const keep = join(dirname(require.resolve(chosen.packageName)), chosen.file);
if (check) require(keep);

function packageRoot(name) {
  let dir = dirname(require.resolve(name));
  while (!readdirSync(dir).includes('package.json')) dir = dirname(dir);
  return dir;
}

function nodeFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return nodeFiles(path);
    return /^uws_.*\.node$/.test(name) ? [path] : [];
  });
}

let removed = 0;
let bytes = 0;
for (const b of UWS_BUILDS) {
  for (const file of nodeFiles(packageRoot(b.packageName))) {
    if (file === keep) continue;
    bytes += statSync(file).size;
    rmSync(file);
    removed++;
  }
}
console.log(`prune-uws: kept ${relative(app, keep)} (${chosen.build}), removed ${removed} binaries (${(bytes / 1048576).toFixed(1)} MiB)`);
