/**
 * worker_threads entry: parses one resources file text (resource-file.ts) off the primary's
 * event loop and posts the result (plain data) or the error message back, then ends.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { parseResourceFile } from './resource-file.js';
import type { ParseJob, ParseOutcome } from './parse-off-thread.js';

const job = workerData as ParseJob;
let outcome: ParseOutcome;
try {
  outcome = { ok: true, parsed: parseResourceFile(job.text, job.file, job.rules) };
} catch (err) {
  outcome = { ok: false, message: (err as Error).message };
}
parentPort!.postMessage(outcome);
