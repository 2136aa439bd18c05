/**
 * The access log under systemd: a service's stdout is a Unix stream socket to journald, shared by
 * its processes. Measures, in one run, the CPU per record (the process's, every thread: the libuv
 * thread pool's writes included) of the two ways the router writes there:
 *  - inherited: to the stdout it was given, on the thread pool (ACCESS_LOG_JOURNAL_SOCKET=off);
 *  - own stream: through a stream of the process's own to the journal's socket (the default when
 *    JOURNAL_STREAM names stdout; src/observe/access-log-journal.ts).
 * A stand-in for journald (test/helpers/mock-journal.ts, counting the lines of each stream after
 * its header, and shutting its side of each stream as journald does) takes both: every run must
 * deliver every record, or the tool fails. Each run is a child process whose stdout is a socket
 * connected to the stand-in, JOURNAL_STREAM set to its device and inode as systemd does; it logs
 * JSON records PER_TURN per event-loop turn (records-per-turn.ts), and the same loop without
 * logging is subtracted. The cases alternate, round by round; the best round of each is printed.
 *
 * Run: npm run build && node dist/bench/access-log-journal-micro.js [--records N] [--rounds N] [--per-turn N]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { createAccessLog } from 'inference-router/observe/access-log';
import { JOURNAL_IDENTIFIER } from 'inference-router/observe/access-log-journal';
import { parseAccessLogSettings } from 'inference-router/observe/access-log-settings';
import { serviceStdout, startMockJournal } from '../test/helpers/mock-journal.js';
import { readCommandLine, type CommandSpec } from './cli-args.js';
import { perTurnCost } from './records-per-turn.js';
import { sampleAccessRecord } from './sample-access-record.js';

const COMMAND: CommandSpec = {
  usage: 'Usage: node dist/bench/access-log-journal-micro.js [--records N (200000)] [--rounds N (5)] [--per-turn N (50)]',
  values: ['--records', '--rounds', '--per-turn'],
};

interface ChildResult { loopUs: number; cpuUs: number }

/** In the child: logs `n` records `perTurn` a turn to stdout (the journal's stream), then the same loop empty; prints the difference per record. */
async function child(n: number, perTurn: number): Promise<void> {
  const records = Array.from({ length: 1000 }, (_, i) => sampleAccessRecord(i));
  // A queue bound above what the loop logs: the run measures writing, not dropping.
  const log = createAccessLog(parseAccessLogSettings({ ...process.env, ACCESS_LOG_FORMAT: 'json', ACCESS_LOG_OUTPUT: 'stdout', ACCESS_LOG_BUFFER_BYTES: String(1 << 30) }));
  const none = (): Promise<void> => Promise.resolve();
  await perTurnCost(records, n, perTurn, () => {}, none); // warm-up
  const empty = await perTurnCost(records, n, perTurn, () => {}, none);
  const logged = await perTurnCost(records, n, perTurn, (r) => log.log(r), () => log.flush());
  await log.close();
  const result: ChildResult = {
    loopUs: ((logged.active - empty.active) * 1000) / n,
    cpuUs: ((logged.cpu - empty.cpu) * 1000) / n,
  };
  process.stderr.write(`${JSON.stringify(result)}\n`);
}

async function parent(n: number, rounds: number, perTurn: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'journal-bench-'));
  const journal = await startMockJournal(dir, 'stdout', { keepLines: false });
  const path = journal.path;
  // The service's stdout, as systemd connects it before it starts the service.
  const { socket: stdout, fd, journalStream } = await serviceStdout(path, 'bench-unit');
  const env = { ...process.env, JOURNAL_STREAM: journalStream, ACCESS_LOG_JOURNAL_SOCKET: path };
  const cases = [
    { name: 'inherited stdout, thread pool', socket: 'off', identifier: 'bench-unit' },
    { name: 'own stream to the journal', socket: path, identifier: JOURNAL_IDENTIFIER },
  ];
  const best = new Map<string, ChildResult>();
  const self = fileURLToPath(import.meta.url);
  console.log(`access log to the systemd journal: ${n} JSON records per run, ${perTurn} per event-loop turn, best of ${rounds} rounds, ` +
    `node ${process.version}; process CPU (all threads) and event-loop active time per record, the empty loop subtracted`);
  try {
    for (let round = 0; round < rounds; round++) {
      for (const c of cases) {
        const before = journal.countOf(c.identifier);
        const p = spawn(process.execPath, [self], {
          env: { ...env, ACCESS_LOG_JOURNAL_SOCKET: c.socket, JOURNAL_BENCH_CHILD: `${n},${perTurn}` },
          stdio: ['ignore', fd, 'pipe'],
        });
        let err = '';
        p.stderr!.setEncoding('utf8').on('data', (d: string) => { err += d; });
        const code = await new Promise<number | null>((resolve) => p.on('exit', resolve));
        const last = err.trim().split('\n').at(-1) ?? '';
        if (code !== 0 || !last.startsWith('{')) throw new Error(`the ${c.name} run exited ${code}: ${err}`);
        const r = JSON.parse(last) as ChildResult;
        // Every record arrived (the stand-in reads on; give it a moment).
        const t0 = performance.now();
        while (journal.countOf(c.identifier) - before < n && performance.now() - t0 < 10_000) await new Promise((res) => setTimeout(res, 20));
        const got = journal.countOf(c.identifier) - before;
        if (got !== n) throw new Error(`the ${c.name} run logged ${n} records; the journal got ${got}`);
        const prev = best.get(c.name);
        best.set(c.name, prev === undefined ? r : { loopUs: Math.min(prev.loopUs, r.loopUs), cpuUs: Math.min(prev.cpuUs, r.cpuUs) });
      }
    }
  } finally {
    stdout.destroy();
    await journal.close();
    rmSync(dir, { recursive: true, force: true });
  }
  for (const c of cases) {
    const r = best.get(c.name)!;
    console.log(`  ${c.name.padEnd(30)} ${r.cpuUs.toFixed(2).padStart(6)} µs CPU  ${r.loopUs.toFixed(2).padStart(6)} µs loop per record`);
  }
  const [a, b] = cases.map((c) => best.get(c.name)!.cpuUs);
  console.log(`  own stream / inherited (CPU): ${(b! / a!).toFixed(2)}`);
}

const CHILD = process.env.JOURNAL_BENCH_CHILD;
if (CHILD !== undefined) {
  const [n, perTurn] = CHILD.split(',').map(Number);
  await child(n!, perTurn!);
} else {
  const { records, rounds, perTurn } = readCommandLine(COMMAND, (line) => ({
    records: Math.round(line.positiveNumber('--records') ?? 200_000),
    rounds: Math.round(line.positiveNumber('--rounds') ?? 5),
    perTurn: Math.round(line.positiveNumber('--per-turn') ?? 50),
  }));
  await parent(records, rounds, perTurn);
}
