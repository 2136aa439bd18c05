/**
 * Work for the end of the current turn of the event loop (after its I/O callbacks), for every
 * module of the request's path in one Immediate: the requests' writes to the pods, the whole
 * answers, the limit client's batch, the front's end-of-turn marker. Each would otherwise make
 * an Immediate of its own, and an Immediate more in a turn costs about 0.8 thousand
 * instructions (docs/internals/performance-changes.md, "One Immediate a turn for the path's
 * end-of-turn work"): at light load, when each request has a turn of its own, that is per request.
 *
 * Tasks run in the order they were queued. A task queued while the turn's tasks run goes to the
 * next turn, as an Immediate made by an Immediate does, so a task that queues itself again still
 * lets I/O in between. A task is queued once per turn by its module (each keeps its own "queued"
 * flag); one that throws (a bug) does not keep the others from running, and the first error is
 * thrown again once all have run.
 */
import { TurnQueue } from './turn-queue.js';

// The tasks for this turn's end; an Immediate is pending exactly when it holds any. runTurnEnd
// swaps it with the (empty) other queue before running the tasks, so tasks queued meanwhile wait
// for an Immediate of their own.
let queued = new TurnQueue<() => void>();
let running = new TurnQueue<() => void>();

/** Runs `task` at the end of this turn, after the tasks queued before it. */
export function atTurnEnd(task: () => void): void {
  queued.push(task);
  if (queued.size === 1) setImmediate(runTurnEnd);
}

function runTurnEnd(): void {
  const tasks = queued;
  queued = running;
  running = tasks;
  tasks.drainEach(callTask);
}

function callTask(task: () => void): void {
  task();
}
