/**
 * What one cluster IPC message costs the process it wakes: a primary and two workers, each
 * worker sending a small rate-limit-sized message every INTERVAL ms, the primary answering the
 * other worker at the end of its turn (the shape of the local limiter's lease reports). Prints
 * the primary's CPU (all its threads, from /proc/<pid>/task/<tid>/schedstat: nanoseconds on a
 * CPU, not tick samples) per message received, for several intervals.
 *
 * Nothing else runs in these processes, so the figure is the wake-up plus Node's IPC handling;
 * on the 2-CPU development VM it was 170–280 µs per message (docs/internals/performance-changes.md, "Local
 * limiter reports"), which is why workers report their leases' use at most every 50 ms.
 *
 * Run: npm run build && node dist/bench/ipc-wakeup.js [seconds per interval, default 4]
 */
import cluster from 'node:cluster';
import { schedCpuNs } from './proc-cpu.js';
import { positiveNumber, readCommandLine, type CommandSpec } from './cli-args.js';

const COMMAND: CommandSpec = {
  usage: 'Usage: node dist/bench/ipc-wakeup.js [SECONDS]   (seconds per interval, default 4)',
  positionals: [0, 1],
};

const INTERVALS_MS = [1, 5, 20, 50];

async function measure(intervalMs: number, seconds: number): Promise<void> {
  const workers = [0, 1].map(() => cluster.fork({ IPC_WAKEUP_INTERVAL_MS: String(intervalMs) }));
  let received = 0;
  const onMessage = (from: (typeof workers)[number]): void => {
    received++;
    setImmediate(() => {
      for (const w of workers) if (w !== from && w.isConnected()) w.send({ t: 'rl:u', a: [1, 120, 340] });
    });
  };
  cluster.on('message', onMessage);
  await new Promise((r) => setTimeout(r, 1000)); // workers started and sending
  const n0 = received;
  const c0 = schedCpuNs(process.pid);
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const n = received - n0;
  const us = (schedCpuNs(process.pid) - c0) / 1000;
  cluster.off('message', onMessage);
  for (const w of workers) w.kill();
  await new Promise((r) => setTimeout(r, 200));
  process.stdout.write(`| ${intervalMs} ms | ${Math.round(n / seconds)} | ${(us / 1000 / seconds).toFixed(1)} ms/s | ${(us / n).toFixed(0)} µs |\n`);
}

if (cluster.isPrimary) {
  const seconds = readCommandLine(COMMAND, (line) => positiveNumber('seconds per interval', line.positionals[0] ?? '4'));
  process.stdout.write('| report interval per worker | messages/s into the primary | primary CPU | per message |\n|---|---|---|---|\n');
  for (const ms of INTERVALS_MS) await measure(ms, seconds);
} else {
  const intervalMs = Number(process.env.IPC_WAKEUP_INTERVAL_MS);
  const op = [5, 1, 'route:default/llama-route', -1, -1, 'second', 12];
  setInterval(() => process.send!({ t: 'rl:q', a: [...op, ...op] }), intervalMs);
  process.on('message', () => {});
}
