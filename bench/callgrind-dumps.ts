/**
 * Reading callgrind's dumps of a process tree run with `--separate-threads=yes`: one file per
 * process, dump and thread, named `<prefix>.<pid>.<dump>-<thread>` (thread 01 is the main
 * thread), each holding a `totals:` (or `summary:`) line of the instructions executed since the
 * counters were last zeroed.
 */
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

export interface ThreadDump {
  readonly pid: number;
  readonly dump: number;
  readonly thread: number;
  readonly instructions: number;
}

const NAME = /^cg\.(\d+)\.(\d+)-(\d+)$/;

/** `cg.<pid>.<dump>-<thread>` → its parts, or null for any other name (the exit dump `cg.<pid>`). */
export function parseDumpName(name: string): { pid: number; dump: number; thread: number } | null {
  const m = NAME.exec(name);
  return m === null ? null : { pid: Number(m[1]), dump: Number(m[2]), thread: Number(m[3]) };
}

/** The instruction total of one dump file's text. */
export function dumpTotal(text: string): number {
  const m = /^(?:totals|summary):\s+(\d+)/m.exec(text);
  if (m === null) throw new Error('callgrind dump without a totals or summary line');
  return Number(m[1]);
}

/**
 * Every thread dump in `dir` (the `cg.` prefix), removed once read so the next dump stands alone.
 * A file still being written (no totals line yet) is left for the next call.
 */
export function takeDumps(dir: string, onText?: (dump: ThreadDump, text: string) => void): ThreadDump[] {
  const out: ThreadDump[] = [];
  for (const name of readdirSync(dir)) {
    const parts = parseDumpName(name);
    if (parts === null) continue;
    const file = join(dir, name);
    const text = readFileSync(file, 'utf8');
    if (!HAS_TOTAL.test(text)) continue;
    const dump = { ...parts, instructions: dumpTotal(text) };
    if (onText !== undefined) onText(dump, text);
    out.push(dump);
    rmSync(file);
  }
  return out;
}

const HAS_TOTAL = /^(?:totals|summary):/m;

/**
 * Waits until each of `pids` has a complete main-thread dump in `dir` and the files have stopped
 * changing (callgrind_control returns before a busy process has written its dump), then takes
 * them all (`onText`, when given, is handed each one's text first).
 */
export async function awaitDumps(dir: string, pids: readonly number[], timeoutMs = 60_000, onText?: (dump: ThreadDump, text: string) => void): Promise<ThreadDump[]> {
  const end = Date.now() + timeoutMs;
  let lastNames = '';
  for (;;) {
    const names = readdirSync(dir).filter((n) => parseDumpName(n) !== null).sort();
    const complete = pids.every((pid) => names.some((n) => {
      const p = parseDumpName(n)!;
      return p.pid === pid && p.thread === 1 && HAS_TOTAL.test(readFileSync(join(dir, n), 'utf8'));
    }));
    const joined = names.join(' ');
    if (complete && joined === lastNames) {
      const all = takeDumps(dir, onText);
      if (readdirSync(dir).some((n) => parseDumpName(n) !== null)) throw new Error(`callgrind dumps in ${dir} still incomplete`);
      return all;
    }
    lastNames = joined;
    if (Date.now() > end) throw new Error(`callgrind dumps of ${pids.join(', ')} did not appear in ${dir} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 300));
  }
}

export interface Split {
  /** The workers' main threads (JavaScript, uWS, the event loop). */
  readonly workersMain: number;
  /** The workers' other threads (V8's compiler and GC helpers, libuv's pool, worker threads). */
  readonly workersOther: number;
  /** Every thread of the primary. */
  readonly primary: number;
}

/** Sums a round's dumps by role; the primary is `primaryPid`, every other process a worker. */
export function splitByRole(dumps: readonly ThreadDump[], primaryPid: number): Split {
  let workersMain = 0;
  let workersOther = 0;
  let primary = 0;
  for (const d of dumps) {
    if (d.pid === primaryPid) primary += d.instructions;
    else if (d.thread === 1) workersMain += d.instructions;
    else workersOther += d.instructions;
  }
  return { workersMain, workersOther, primary };
}
