/**
 * Parses a large auth file in a short-lived worker thread. At start the process waits for it,
 * synchronously (parseAuthConfigOffThread: nothing is served yet); a reload does not wait
 * (parseAuthConfigInThread: the event loop goes on serving with the config in use until the new
 * one is parsed). The YAML parse of a file of 20,000 keys (3.8 MB) grew each process's heap by
 * about 270 MB that V8 kept once the parse was over; the thread's heap goes with the thread, and the
 * process keeps the config alone (about 50 MB more resident for those keys).
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

/** A parser thread started on one text, and the port its outcome comes on. */
function startThread(text: string, file: string, redisCluster: boolean, threadFile: URL): { thread: Worker; port: MessagePort; done: Int32Array } {
  const { port1, port2 } = new MessageChannel();
  const done = new Int32Array(new SharedArrayBuffer(4));
  const thread = new Worker(BOOTSTRAP, { eval: true, workerData: { text, file, redisCluster, port: port2, done, entry: threadFile.href }, transferList: [port2] });
  thread.on('error', () => undefined); // said by the outcome, or by the errors below
  return { thread, port: port1, done };
}

/** parseAuthConfig(text, file, redisCluster), run in `threadFile` and waited for; throws what it throws (an AuthConfigError as one). */
export function parseAuthConfigOffThread(text: string, file: string, redisCluster: boolean, threadFile: URL = AUTH_PARSE_THREAD): AuthConfig {
  const { thread, port, done } = startThread(text, file, redisCluster, threadFile);
  // Woken by the thread once it posted; one that dies without posting (out of memory) by the deadline.
  Atomics.wait(done, 0, 0, PARSE_DEADLINE_MS);
  const reply = receiveMessageOnPort(port);
  if (reply === undefined) {
    release(thread, port);
    throw new Error(`${file}: the auth file's parser thread gave no result within ${PARSE_DEADLINE_MS / 1000} s`);
  }
  return settle(reply.message as AuthParseOutcome, file, thread, port);
}

/**
 * The same without waiting: resolves with the config, rejects with what parseAuthConfig throws, or
 * with an error naming the file when the thread ends without an outcome (out of memory) or gives
 * none within `deadlineMs`.
 */
export function parseAuthConfigInThread(text: string, file: string, redisCluster: boolean, threadFile: URL = AUTH_PARSE_THREAD, deadlineMs = PARSE_DEADLINE_MS): Promise<AuthConfig> {
  const { thread, port } = startThread(text, file, redisCluster, threadFile);
  return new Promise((resolve, reject) => {
    /** What ended the thread, when something thrown in it did (out of memory, a bug in the parser). */
    let thrown = '';
    thread.on('error', (err: Error) => { thrown = `: ${err.message}`; });
    const outcome = (o: AuthParseOutcome): void => {
      finish();
      try {
        resolve(settle(o, file, thread, port));
      } catch (err) {
        reject(err as Error);
      }
    };
    const failed = (why: string): void => {
      finish();
      release(thread, port);
      reject(new Error(`${file}: the auth file's parser thread ${why}`));
    };
    const onExit = (code: number): void => {
      // An outcome posted just before the thread ended may not have been delivered yet.
      const reply = receiveMessageOnPort(port);
      if (reply !== undefined) outcome(reply.message as AuthParseOutcome);
      else failed(`ended (code ${code}) without a result${thrown}`);
    };
    const finish = (): void => {
      clearTimeout(deadline);
      port.off('message', outcome);
      thread.off('exit', onExit);
    };
    port.on('message', outcome);
    thread.on('exit', onExit);
    const deadline = setTimeout(() => failed(`gave no result within ${deadlineMs / 1000} s`), deadlineMs);
  });
}

/** The thread ended and its port closed: done with, whatever it gave. */
function release(thread: Worker, port: MessagePort): void {
  void thread.terminate();
  port.close();
}

function settle(o: AuthParseOutcome, file: string, thread: Worker, port: MessagePort): AuthConfig {
  release(thread, port);
  if (o.ok) return deepFreeze(o.config);
  if (o.file !== null) throw new AuthConfigError(o.file, o.path, o.problem);
  throw new Error(`${file}: ${o.problem}`);
}
