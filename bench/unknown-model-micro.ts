/**
 * Micro benchmark of what a request for a model no route serves costs in its "did you mean" hint:
 * the requested name compared with the served ones (NearNames, src/config/near-name.ts, as the route
 * table prepares them: lower-cased once; past 500 names only a name equal but for case), for 10,
 * 100, 1,000 and 20,000 served names of one length (`org-model-0042-instruct-v2`: none is passed over for its
 * length, the costliest case), with a name one edit from one of them (the hint found) and one three
 * edits from every one (none found). With `--base <tree>`,
 * the same calls of that tree's built nearName run beside this tree's, in one run, and the ratio
 * is printed: how a change to the comparison measured. A name asked for again is answered from the
 * route table's kept hints, a Map lookup (route-table.ts), which this does not time.
 *
 * Run: npm run build && node dist/bench/unknown-model-micro.js [--base <tree>]
 */
import { performance } from 'node:perf_hooks';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { NearNames } from 'inference-router/config/near-name';
import { readCommandLine } from './cli-args.js';

type NearName = (word: string, candidates: readonly string[]) => string | null;

/** This tree's search as the route table runs it: the names prepared once, per table. */
function prepared(): NearName {
  let kept: { names: readonly string[]; near: NearNames } | null = null;
  return (word, names) => {
    if (kept === null || kept.names !== names) kept = { names, near: new NearNames(names) };
    return kept.near.near(word);
  };
}

const USAGE = 'Usage: node dist/bench/unknown-model-micro.js [--base <tree>]   (a tree whose dist/ is built: its nearName is timed beside this one)';
const base = readCommandLine({ usage: USAGE, values: ['--base'] }, (line) => line.value('--base'));

/** µs per call of `fn` over `names` for `word`, after a warm-up; at least 200 ms of calls. */
function time(fn: NearName, word: string, names: readonly string[]): number {
  for (let i = 0; i < 200; i++) fn(word, names);
  let calls = 0;
  const t0 = performance.now();
  let elapsed = 0;
  do {
    for (let i = 0; i < 50; i++) fn(word, names);
    calls += 50;
    elapsed = performance.now() - t0;
  } while (elapsed < 200);
  return (elapsed * 1000) / calls;
}

async function main(): Promise<void> {
  const before: NearName | null = base === undefined
    ? null
    : ((await import(pathToFileURL(join(resolve(base), 'dist/config/near-name.js')).href)) as { nearName: NearName }).nearName;
  console.log(`unknown-model hint micro benchmark (node ${process.version}): µs per request naming a model no route serves`);
  const nearName = prepared();
  for (const count of [10, 100, 1000, 20_000]) {
    const names = Array.from({ length: count }, (_, i) => `org-model-${String(i).padStart(4, '0')}-instruct-v2`);
    for (const [what, word] of [['one edit from a served name', 'org-model-0007-instrct-v2'], ['three edits from every name', 'org-mdl-0007-instrct-v3']] as const) {
      const now = time(nearName, word, names);
      const label = `${String(count).padStart(5)} names, ${what}`;
      if (before === null) {
        console.log(`${label.padEnd(48)} ${now.toFixed(2).padStart(9)} µs`);
      } else {
        const was = time(before, word, names);
        console.log(`${label.padEnd(48)} ${now.toFixed(2).padStart(9)} µs   base ${was.toFixed(2).padStart(9)} µs   ${(now / was).toFixed(3)}×`);
      }
    }
  }
}

await main();
