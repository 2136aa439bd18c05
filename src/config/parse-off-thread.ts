/**
 * Parses a resources file text in a short-lived worker thread, so that a large file (YAML
 * parsing costs about 0.7 s per MiB) does not stall the primary, which answers the workers'
 * limit requests, metrics scrapes and heartbeats meanwhile. A small text is parsed in place
 * (parseHere): a thread costs about 0.25 s of CPU to start and load the parser, beside the
 * workers on the same CPUs, where a file of a few routes takes a few milliseconds.
 */
import { Worker } from 'node:worker_threads';
import { parseResourceFile, type ParsedResourceFile } from './resource-file.js';
import type { ResourceRules } from './resources.js';

export interface ParseJob {
  text: string;
  file: string;
  rules: ResourceRules;
}

export type ParseOutcome = { ok: true; parsed: ParsedResourceFile } | { ok: false; message: string };

export const DEFAULT_PARSE_THREAD = new URL('./resource-parse-thread.js', import.meta.url);

/**
 * A reload of a text longer than this (in characters: about 75 routes with a ModelServer each) is
 * parsed in a thread; a shorter one in place: 16–31 ms for 64 routes (26 K characters) on a busy
 * 2-CPU machine, more for odd input (deeply nested flow lists).
 */
export const PARSE_IN_PLACE_CHARS = 32 * 1024;

/** The job's outcome, parsed on this thread (what the parser thread runs). */
export function parseHere(job: ParseJob): ParseOutcome {
  try {
    return { ok: true, parsed: parseResourceFile(job.text, job.file, job.rules) };
  } catch (err) {
    return { ok: false, message: (err as Error).message };
  }
}

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
