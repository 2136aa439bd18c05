/**
 * Micro benchmark of the access log: main-thread cost per record of formatting and writing,
 * JSON and text, three ways, in one run:
 *  - format only: formatJson/formatText, nothing written;
 *  - unbatched:   one sonic-boom write() of a string per record (utf8 mode, as loggers use it);
 *  - batched:     the AccessLog writer (whole-record batches handed over once per event-loop turn).
 * Records are logged RECORDS_PER_TURN per event-loop turn, like requests finishing together.
 * The figure is event-loop active time (performance.eventLoopUtilization) per record, minus the
 * same loop with no logging; the write(2) calls themselves run on the libuv thread pool.
 *
 * Run: npm run build && node dist/bench/access-log-micro.js
 * Env: BENCH_RECORDS (per case, default 200000), BENCH_PER_TURN (default 50), BENCH_ROUNDS (default 5;
 *      the best round of each case is printed),
 *      BENCH_FLUSH_INTERVAL_MS (the writer's ACCESS_LOG_FLUSH_INTERVAL, default its default),
 *      BENCH_OUTPUT (one path to measure instead of the default two: a new regular file in the OS
 *      temp dir, and a FIFO drained by `cat` like a container runtime's stdout pipe).
 */
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAccessLog } from 'inference-router/observe/access-log';
import { formatJson, formatText } from 'inference-router/observe/access-log-format';
import { DEFAULT_FLUSH_INTERVAL_MS } from 'inference-router/observe/access-log-settings';
import { maxWriteFor } from 'inference-router/observe/access-log-sink';
import sonicBoom from 'sonic-boom';
import type { AccessRecord } from 'inference-router/observe/access-record';
import { takesNoArguments } from './cli-args.js';
import { perTurnCost, type Cost } from './records-per-turn.js';
import { sampleAccessRecord } from './sample-access-record.js';

takesNoArguments('Usage: node dist/bench/access-log-micro.js   (no options; settings from BENCH_RECORDS, BENCH_PER_TURN, BENCH_ROUNDS, BENCH_FLUSH_INTERVAL_MS, BENCH_OUTPUT)');

const N = Number(process.env.BENCH_RECORDS ?? 200_000);
const PER_TURN = Number(process.env.BENCH_PER_TURN ?? 50);
const BUFFER_BYTES = 256 * 1024 * 1024;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const FLUSH_INTERVAL_MS = Number(process.env.BENCH_FLUSH_INTERVAL_MS ?? DEFAULT_FLUSH_INTERVAL_MS);

// Built once so the loop measures logging, not record construction.
const RECORDS = Array.from({ length: 1000 }, (_, i) => sampleAccessRecord(i));

/** `each` over N records, PER_TURN a turn, then `done` (records-per-turn.ts). */
const activeMs = (each: (r: AccessRecord) => void, done: () => Promise<void>): Promise<Cost> => perTurnCost(RECORDS, N, PER_TURN, each, done);

const noop = (): void => {};
const none = (): Promise<void> => Promise.resolve();
const minCost = (a: Cost, b: Cost): Cost => ({ active: Math.min(a.active, b.active), cpu: Math.min(a.cpu, b.cpu) });
const WORST: Cost = { active: Infinity, cpu: Infinity };

interface Output { label: string; path: string; maxWrite: number }

/** Runs every case ROUNDS times, interleaved, against `out`; prints the best round of each. */
async function measure(out: Output): Promise<void> {
  const base = minCost(await activeMs(noop, none), await activeMs(noop, none));
  const us = (c: Cost): string => `${(((c.active - base.active) * 1000) / N).toFixed(2).padStart(6)} µs loop ` +
    `${(((c.cpu - base.cpu) * 1000) / N).toFixed(2).padStart(6)} µs CPU`;
  const formats = [['json', formatJson], ['text', formatText]] as const;
  const best = new Map<string, Cost>();
  const keep = (key: string, c: Cost): void => { best.set(key, minCost(best.get(key) ?? WORST, c)); };
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, format] of formats) {
      let sink: unknown = 0;
      keep(`${name} format`, await activeMs((r) => { sink = format(r); }, none));
      void sink;

      // What a logger usually does: one string write per record (utf8 mode), same write size as the writer.
      const raw = new sonicBoom.SonicBoom({
        dest: out.path, sync: false, minLength: 0, maxWrite: out.maxWrite, maxLength: BUFFER_BYTES,
      });
      keep(`${name} unbatched`, await activeMs(
        (r) => { raw.write(format(r) + '\n'); },
        () => new Promise<void>((resolve, reject) => raw.flush((err?: Error) => (err ? reject(err) : resolve()))),
      ));
      raw.end();

      const log = createAccessLog({ enabled: true, format: name, output: out.path, bufferBytes: BUFFER_BYTES,
        flushIntervalMs: FLUSH_INTERVAL_MS, journalSocket: null });
      keep(`${name} batched`, await activeMs((r) => log.log(r), () => log.flush()));
      await log.close();
    }
  }
  console.log(`\n${out.label} (${out.path}), writes <= ${out.maxWrite} bytes; empty-loop baseline ` +
    `${((base.active * 1000) / N).toFixed(2)} µs loop, ${((base.cpu * 1000) / N).toFixed(2)} µs CPU per record subtracted`);
  for (const [name] of formats) {
    console.log(`  ${name} format only ${us(best.get(`${name} format`)!)} per record`);
    console.log(`  ${name} unbatched   ${us(best.get(`${name} unbatched`)!)} per record  (format + one sonic-boom string write per record)`);
    console.log(`  ${name} batched     ${us(best.get(`${name} batched`)!)} per record  (AccessLog)`);
  }
}

async function main(): Promise<void> {
  console.log(`access-log micro: ${N} records per case, ${PER_TURN} per event-loop turn, best of ${ROUNDS} rounds, ` +
    `flush interval ${FLUSH_INTERVAL_MS} ms, node ${process.version}; event-loop active time and process CPU ` +
    `(all threads) per record`);
  await activeMs(noop, none); // warm-up
  const dir = mkdtempSync(join(tmpdir(), 'access-log-bench-'));
  try {
    if (process.env.BENCH_OUTPUT !== undefined) {
      const path = process.env.BENCH_OUTPUT;
      await measure({ label: 'output', path, maxWrite: maxWriteFor(statSync(path, { throwIfNoEntry: false })?.isFile() ?? true) });
      return;
    }
    await measure({ label: 'regular file', path: join(dir, 'access.log'), maxWrite: maxWriteFor(true) });
    // A FIFO drained by `cat`, like a container runtime reading stdout. Holding a read-write
    // descriptor keeps `cat` from seeing end-of-file between the cases.
    const fifo = join(dir, 'access.fifo');
    execFileSync('mkfifo', [fifo]);
    const hold = openSync(fifo, 'r+');
    const cat = spawn('cat', [fifo], { stdio: ['ignore', 'ignore', 'inherit'] });
    try {
      await measure({ label: 'pipe (FIFO read by cat)', path: fifo, maxWrite: maxWriteFor(false) });
    } finally {
      cat.kill();
      closeSync(hold);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
