/**
 * One run of turn-instructions.ts: `node turn-instructions-runner.js <tree> <way> <tasks> <turns>`
 * runs `turns` turns of the event loop, each ending with `tasks` end-of-turn tasks, queued either
 * each with its own Immediate (`immediates`) or with the tree's atTurnEnd (`turn-end`); the last
 * task of a turn starts the next turn. Nothing else: the difference between two runs is the
 * turns' own work.
 */
import { join } from 'node:path';

const [tree, way, tasksArg, turnsArg] = process.argv.slice(2);
const tasks = Number(tasksArg);
const turns = Number(turnsArg);
const { atTurnEnd } = await import(join(tree, 'dist/turn-end.js')) as typeof import('../src/turn-end.js');
const queue = queueOf(way);

function queueOf(name: string): (task: () => void) => void {
  if (name === 'turn-end') return atTurnEnd;
  if (name === 'immediates') return (task) => { setImmediate(task); };
  throw new Error(`no way ${name}: immediates or turn-end`);
}

let done = 0;
let sink = 0;
function other(): void {
  sink++;
}
function last(): void {
  if (++done < turns) turn();
}
function turn(): void {
  for (let i = 1; i < tasks; i++) queue(other);
  queue(last);
}
turn();
process.on('exit', () => {
  if (sink === -1) console.log(sink);
});
