/**
 * Parses a large auth file in a short-lived worker thread and waits for it, synchronously (the
 * auth file is read at start and on each change with a synchronous parse). The YAML parse of a file
 * of 20,000 keys (3.8 MB) grew each process's heap by about 270 MB that V8 kept once the parse was
 * over; the thread's heap goes with the thread, and the process keeps the config alone (about 50
 * MB more resident for those keys).
 */
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import { AuthConfigError, type AuthConfig } from './auth-config.js';
import { deepFreeze } from '../config/deep-freeze.js';

export interface AuthParseJob {
  readonly text: string;
  readonly file: string;
  readonly redisCluster: boolean;
}

export type AuthParseOutcome =
  | { ok: true; config: AuthConfig }
  | { ok: false; file: string | null; path: string | null; problem: string };

/** Longest wait for the thread's answer (a file of 20,000 keys takes about 2.5 s). */
const PARSE_DEADLINE_MS = 60_000;

/**
 * The thread's code: loads the parser module and runs it; a module that cannot be loaded is said on
 * the port and wakes the waiting thread too (the Worker's own error event would come only once the
 * waiting thread's event loop runs again).
 */
const BOOTSTRAP = `
const { workerData } = require('node:worker_threads');
import(workerData.entry).then((m) => m.runAuthParse(workerData), (err) => {
  workerData.port.postMessage({ ok: false, file: null, path: null, problem: 'cannot load the auth file parser: ' + err.message });
  Atomics.store(workerData.done, 0, 1);
  Atomics.notify(workerData.done, 0);
});`;

export const AUTH_PARSE_THREAD = new URL('./auth-parse-thread.js', import.meta.url);

/** parseAuthConfig(text, file, redisCluster), run in `threadFile`; throws what it throws (an AuthConfigError as one). */
export function parseAuthConfigOffThread(text: string, file: string, redisCluster: boolean, threadFile: URL = AUTH_PARSE_THREAD): AuthConfig {
  const { port1, port2 } = new MessageChannel();
  const done = new Int32Array(new SharedArrayBuffer(4));
  const thread = new Worker(BOOTSTRAP, { eval: true, workerData: { text, file, redisCluster, port: port2, done, entry: threadFile.href }, transferList: [port2] });
  thread.on('error', () => undefined); // said by the outcome, or by the error below
  // Woken by the thread once it posted; one that dies without posting (out of memory) by the deadline.
  Atomics.wait(done, 0, 0, PARSE_DEADLINE_MS);
  const reply = receiveMessageOnPort(port1);
  if (reply === undefined) {
    void thread.terminate();
    port1.close();
    throw new Error(`${file}: the auth file's parser thread gave no result within ${PARSE_DEADLINE_MS / 1000} s`);
  }
  return settle(reply.message as AuthParseOutcome, file, thread, port1);
}

function settle(o: AuthParseOutcome, file: string, thread: Worker, port: MessagePort): AuthConfig {
  void thread.terminate();
  port.close();
  if (o.ok) return deepFreeze(o.config);
  if (o.file !== null) throw new AuthConfigError(o.file, o.path, o.problem);
  throw new Error(`${file}: ${o.problem}`);
}
