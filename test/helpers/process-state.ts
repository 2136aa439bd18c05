/**
 * Run before each test file (vitest's setupFiles). Test files share their worker process
 * (`isolate: false` in vitest.config.ts), so what one file leaves changed in the process would
 * reach the files after it, in an order that changes with the run. After each file this checks
 * that it left the process as it found it: the environment, the working directory, the clock
 * (fake timers) and the process's listeners for signals and process-wide errors. A file that
 * leaves any of them changed fails, naming what it left.
 */
import { afterAll, beforeAll, vi } from 'vitest';

/** Process events whose listeners outlive a file when it does not remove them. */
const EVENTS = ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGUSR2', 'uncaughtException', 'unhandledRejection', 'warning', 'message'] as const;

interface ProcessState {
  readonly env: Record<string, string | undefined>;
  readonly cwd: string;
  readonly listeners: Record<string, number>;
}

function now(): ProcessState {
  const listeners: Record<string, number> = {};
  for (const e of EVENTS) listeners[e] = process.listenerCount(e);
  return { env: { ...process.env }, cwd: process.cwd(), listeners };
}

/** What `after` changed of `before`, one line each; empty when nothing. */
export function processStateChanges(before: ProcessState, after: ProcessState, fakeTimers: boolean): string[] {
  const out: string[] = [];
  for (const k of new Set([...Object.keys(before.env), ...Object.keys(after.env)])) {
    if (before.env[k] !== after.env[k]) out.push(`process.env.${k}: ${JSON.stringify(before.env[k])} → ${JSON.stringify(after.env[k])}`);
  }
  if (before.cwd !== after.cwd) out.push(`working directory: ${before.cwd} → ${after.cwd}`);
  for (const e of EVENTS) {
    if (after.listeners[e]! > before.listeners[e]!) out.push(`process listeners for '${e}': ${before.listeners[e]} → ${after.listeners[e]}`);
  }
  if (fakeTimers) out.push('fake timers still on (call vi.useRealTimers())');
  return out;
}

let before: ProcessState | null = null;

beforeAll(() => {
  before = now();
});

afterAll(() => {
  if (before === null) return;
  const changes = processStateChanges(before, now(), vi.isFakeTimers());
  if (changes.length > 0) throw new Error(`this file left the shared test process changed:\n  ${changes.join('\n  ')}`);
});
