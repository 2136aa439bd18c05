/**
 * worker_threads entry: parses one resources file text (resource-file.ts) off the primary's
 * event loop and posts the result (plain data) or the error message back, then ends.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { parseHere, type ParseJob } from './parse-off-thread.js';

parentPort!.postMessage(parseHere(workerData as ParseJob));
