/**
 * One run of call-instructions.ts: `node call-instructions-runner.js <tree> <case> <calls>` calls
 * the case `calls` times. Nothing else: the difference between two runs is the calls' own work.
 */
import { join } from 'node:path';

const [tree, name, callsArg] = process.argv.slice(2);
const { CALLS } = await import(join(tree, 'dist/bench/call-instructions-cases.js')) as typeof import('./call-instructions-cases.js');
const call = CALLS[name];
if (call === undefined) throw new Error(`no case ${name}`);
const calls = Number(callsArg);
let sink = 0;
for (let i = 0; i < calls; i++) sink += call();
if (sink === -1) console.log(sink);
