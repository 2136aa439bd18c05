/**
 * What the auth file's parser thread runs (parse-auth-off-thread.ts): parses one auth file text
 * (auth-config.ts), posts the config (plain data) or the error on the port it was given, then wakes
 * the thread waiting for it.
 */
import type { MessagePort } from 'node:worker_threads';
import { AuthConfigError, parseAuthConfig } from './auth-config.js';
import type { AuthParseJob, AuthParseOutcome } from './parse-auth-off-thread.js';

export function runAuthParse(job: AuthParseJob & { port: MessagePort; done: Int32Array }): void {
  let outcome: AuthParseOutcome;
  try {
    outcome = { ok: true, config: parseAuthConfig(job.text, job.file, job.redisCluster) };
  } catch (err) {
    outcome = err instanceof AuthConfigError
      ? { ok: false, file: err.file, path: err.path, problem: err.problem }
      : { ok: false, file: null, path: null, problem: (err as Error).message };
  }
  job.port.postMessage(outcome);
  Atomics.store(job.done, 0, 1);
  Atomics.notify(job.done, 0);
}
