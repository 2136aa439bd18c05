/**
 * Parses a resources file text in a short-lived worker thread, so that a large file (YAML
 * parsing costs about 0.7 s per MiB) does not stall the primary, which answers the workers'
 * limit requests, metrics scrapes and heartbeats meanwhile.
 */
import { Worker } from 'node:worker_threads';
import type { ParsedResourceFile } from './resource-file.js';
import type { ResourceRules } from './resources.js';

export interface ParseJob {
  text: string;
  file: string;
  rules: ResourceRules;
}

export type ParseOutcome = { ok: true; parsed: ParsedResourceFile } | { ok: false; message: string };

export const DEFAULT_PARSE_THREAD = new URL('./resource-parse-thread.js', import.meta.url);

/** Resolves with the thread's outcome; a thread that dies without one resolves as a failure. */
export function parseOffThread(job: ParseJob, threadFile: URL = DEFAULT_PARSE_THREAD): Promise<ParseOutcome> {
  return new Promise((resolve) => {
    let settled = false;
    const done = (o: ParseOutcome): void => {
      if (settled) return;
      settled = true;
      resolve(o);
    };
    const thread = new Worker(threadFile, { workerData: job });
    thread.once('message', (o: ParseOutcome) => done(o));
    thread.once('error', (err) => done({ ok: false, message: `${job.file}: cannot parse: ${err.message}` }));
    thread.once('exit', (code) => done({ ok: false, message: `${job.file}: the parser thread exited (code ${code}) without a result` }));
  });
}
