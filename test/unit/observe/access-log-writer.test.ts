import { spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AccessRecord } from '../../../src/observe/access-record.js';
import { createAccessLog, WARN_INTERVAL_MS } from '../../../src/observe/access-log.js';
import { formatJson, formatText } from '../../../src/observe/access-log-format.js';
import { MAX_RECORD_BYTES } from '../../../src/observe/access-log-format.js';
import { parseAccessLogSettings } from '../../../src/observe/access-log-settings.js';
import { checkAccessLogOutput } from '../../../src/observe/access-log-sink.js';
import { buildAccessLog } from './build-access-log.js';
import { parseTextLine } from './text-line-parser.js';

const fixtures = new URL('./fixtures/', import.meta.url).pathname;
let moduleUrl = '';
let buildDir = '';
let dir = '';

beforeAll(() => {
  ({ moduleUrl, dir: buildDir } = buildAccessLog());
  dir = mkdtempSync(join(tmpdir(), 'access-log-'));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(buildDir, { recursive: true, force: true });
});

interface Run { code: number | null; stdout: Buffer; stderr: string }

/** Runs a shell pipeline in its own process group; kills the group after `timeoutMs` or once `stopWhen(stderr)`. */
function sh(cmd: string, env: Record<string, string>, timeoutMs = 50_000, stopWhen?: (stderr: string) => boolean): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', cmd], {
      cwd: fixtures, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true,
    });
    const out: Buffer[] = [];
    let err = '';
    child.stdout.on('data', (b: Buffer) => out.push(b));
    const kill = (): void => {
      try { process.kill(-(child.pid as number), 'SIGKILL'); } catch { /* gone */ }
    };
    child.stderr.on('data', (b: Buffer) => {
      err += b.toString();
      if (stopWhen?.(err)) kill();
    });
    const timer = setTimeout(kill, timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: Buffer.concat(out), stderr: err });
    });
  });
}

interface WorkerStats { worker: string; written: number; dropped: number }

function workerStats(stderr: string): WorkerStats[] {
  const line = stderr.trim().split('\n').find((l) => l.startsWith('[{'));
  if (line === undefined) throw new Error(`no stats in stderr: ${stderr}`);
  return JSON.parse(line) as WorkerStats[];
}

/** Checks every line is one whole record and every record of every worker arrived exactly once. */
function checkLines(data: Buffer, workers: number, records: number, parse: (line: string) => string): void {
  const text = data.toString('utf8');
  expect(text.endsWith('\n')).toBe(true);
  const lines = text.slice(0, -1).split('\n');
  expect(lines).toHaveLength(workers * records);
  const seen = new Set<string>();
  for (const line of lines) {
    expect(Buffer.byteLength(line) + 1).toBeLessThanOrEqual(MAX_RECORD_BYTES);
    seen.add(parse(line));
  }
  expect(seen.size).toBe(workers * records);
  for (let w = 0; w < workers; w++) {
    expect(seen.has(`${w}-0`) && seen.has(`${w}-${records - 1}`)).toBe(true);
  }
}

const hasStrace = spawnSync('strace', ['-V']).status === 0;

/** The records the warnings say were dropped, added up. */
function droppedIn(warnings: readonly string[]): number {
  return warnings.reduce((n, w) => n + Number(/; dropped (\d+) records/.exec(w)?.[1] ?? 0), 0);
}

describe('several cluster workers, one sink', () => {
  it('stdout pipe drained slower than written: whole records, each write(2) <= 4096 bytes of whole lines', async () => {
    const workers = 4;
    const records = 4000;
    const trace = join(dir, 'trace.txt');
    // The reader starts late, so the pipe fills and every worker queues in sonic-boom.
    const writer = hasStrace
      ? `strace -f -qq -s 5000 -e trace=write,openat -o ${trace} node cluster-writer.mjs`
      : 'node cluster-writer.mjs';
    const run = await sh(`${writer} | (sleep 1; cat)`, {
      AL_MODULE: moduleUrl, AL_WORKERS: String(workers), AL_RECORDS: String(records),
      ACCESS_LOG_FORMAT: 'json', ACCESS_LOG_OUTPUT: 'stdout',
    });
    expect(run.code, run.stderr).toBe(0);
    checkLines(run.stdout, workers, records, (line) => JSON.parse(line).request_id as string);
    for (const s of workerStats(run.stderr)) expect(s).toMatchObject({ written: records, dropped: 0 });

    if (hasStrace) {
      // Each process writes to the pipe through a non-blocking description of its own, opened
      // again through /proc/self/fd/1 (`<tid> openat(AT_FDCWD, "/proc/self/fd/1", ...) = <fd>`), or
      // else to fd 1; each write: `<tid> write(<fd>, "<content>", <len>) = <n>` (or split as <unfinished ...>).
      const lines = readFileSync(trace, 'utf8').split('\n');
      const own = new Map<string, string>();
      const opening = new Set<string>(); // an openat strace split (`<unfinished ...>`, then `<... openat resumed>`)
      for (const l of lines) {
        const m = /^(\d+) +openat\(AT_FDCWD, "\/proc\/self\/fd\/1", [^)<]*O_NONBLOCK[^)<]*(?:\)\s+=\s+(\d+)| <unfinished \.\.\.>)/.exec(l);
        if (m !== null && m[2] !== undefined) own.set(m[1], m[2]);
        else if (m !== null) opening.add(m[1]);
        const resumed = /^(\d+) +<\.\.\. openat resumed>.*\)\s+=\s+(\d+)/.exec(l);
        if (resumed !== null && opening.delete(resumed[1])) own.set(resumed[1], resumed[2]);
      }
      // Written from the event loop or, after a write slowed by strace itself, a thread of the pool (another id): by descriptor.
      const pipeFds = new Set(['1', ...own.values()]);
      const toPipe = (l: string): boolean => {
        const m = /^\d+ +write\((\d+), /.exec(l);
        return m !== null && pipeFds.has(m[1]);
      };
      const writes = lines.filter(toPipe);
      expect(own.size).toBe(workers);
      expect(writes.filter((l) => !/^\d+ +write\(1, /.test(l)).length).toBe(writes.length);
      expect(writes.length).toBeGreaterThan(workers * records * 300 / MAX_RECORD_BYTES);
      for (const w of writes) {
        const m = /^\d+ +write\(\d+, "((?:[^"\\]|\\.)*)", (\d+)/.exec(w);
        expect(m, w).not.toBeNull();
        const [, content, len] = m as RegExpExecArray;
        expect(Number(len)).toBeLessThanOrEqual(MAX_RECORD_BYTES);
        expect(content.startsWith('{\\"timestamp\\":')).toBe(true);
        expect(content.endsWith('}\\n')).toBe(true);
      }
    }
  });

  it('one file opened for appending by every worker, text format, no record cut or lost', async () => {
    const workers = 4;
    const records = 15000;
    const file = join(dir, 'cluster.log');
    const run = await sh('node cluster-writer.mjs', {
      AL_MODULE: moduleUrl, AL_WORKERS: String(workers), AL_RECORDS: String(records), AL_CHUNK: '2000',
      ACCESS_LOG_FORMAT: 'text', ACCESS_LOG_OUTPUT: file,
    });
    expect(run.code, run.stderr).toBe(0);
    checkLines(readFileSync(file), workers, records, (line) => parseTextLine(line).fields.request_id as string);
  });
});

describe('a stalled sink', () => {
  it('keeps the queue bounded, drops and counts, warns at most once a minute', async () => {
    const records = 120_000;
    const bufferBytes = 256 * 1024;
    // `sleep` never reads the pipe: after 64 KiB in the pipe and `bufferBytes` queued, records drop.
    const run = await sh('node --expose-gc stalled-writer.mjs | sleep 30', {
      AL_MODULE: moduleUrl, AL_RECORDS: String(records), AL_CHUNK: '1000', AL_TICK_MS: '1000',
      ACCESS_LOG_FORMAT: 'json', ACCESS_LOG_OUTPUT: 'stdout', ACCESS_LOG_BUFFER_BYTES: String(bufferBytes),
    }, 20_000, (err) => err.includes('{"written"') && err.endsWith('\n'));
    const line = run.stderr.trim().split('\n').find((l) => l.startsWith('{"written"'));
    expect(line, run.stderr).toBeDefined();
    const s = JSON.parse(line as string) as {
      written: number; dropped: number; lineBytes: number; arrayBuffers: number; warnings: { at: number; msg: string }[];
    };
    expect(s.written + s.dropped).toBe(records);
    expect(s.dropped).toBeGreaterThan(records / 2);
    // Accepted bytes: what the pipe holds (64 KiB) plus the bounded queue, give or take a batch.
    expect(s.written * s.lineBytes).toBeLessThanOrEqual(bufferBytes + 64 * 1024 + 2 * MAX_RECORD_BYTES);
    expect(s.written * s.lineBytes).toBeGreaterThan(bufferBytes / 2);
    // Memory held for queued records is the queued bytes, not more (no pinned slabs).
    expect(s.arrayBuffers).toBeLessThan(bufferBytes + 1024 * 1024);
    // 120 turns of 1 s of fake clock: warnings at the first drop, then once per 60 s at most. A
    // write the busy machine made take 10 ms or more (timed by the real clock) is said apart.
    const drops = s.warnings.filter((w) => !/^access log: a write to stdout took \d+ ms; writing on the thread pool/.test(w.msg));
    expect(s.warnings.length - drops.length).toBeLessThanOrEqual(1);
    expect(drops.length).toBeGreaterThanOrEqual(2);
    expect(drops.length).toBeLessThanOrEqual(3);
    for (let i = 1; i < drops.length; i++) {
      expect(drops[i]!.at - drops[i - 1]!.at).toBeGreaterThanOrEqual(WARN_INTERVAL_MS);
    }
    expect(drops[0]!.msg).toMatch(/^access log: stdout is not keeping up; dropped \d+ records/);
    const reported = drops.reduce((n, w) => n + Number(/dropped (\d+) records/.exec(w.msg)![1]), 0);
    expect(reported).toBeLessThanOrEqual(s.dropped);
  });
});

function record(seq: number): AccessRecord {
  return {
    timestamp: 1_795_000_000_000 + seq, method: 'POST', path: '/v1/completions', protocol: 'HTTP/1.1',
    status_code: 200, error: null, model_name: 'm', model_route: 'default/r', model_server: 'default/s',
    selected_pod: 'p-0', request_id: `r-${seq}`, input_tokens: 1, output_tokens: 2, duration_total: 3,
    duration_request_processing: 1, duration_upstream_processing: 1, duration_response_processing: 1,
  };
}

const ids = (file: string): string[] =>
  readFileSync(file, 'utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l).request_id as string);

describe('one writer, a file', () => {
  it('flush() writes every queued record, including many batches logged in one turn', async () => {
    const file = join(dir, 'flush.log');
    const log = createAccessLog(parseAccessLogSettings({ ACCESS_LOG_FORMAT: 'json', ACCESS_LOG_OUTPUT: file }));
    for (let i = 0; i < 30_000; i++) log.log(record(i));
    await log.flush();
    const got = ids(file);
    expect(got).toHaveLength(30_000);
    expect(got[0]).toBe('r-0');
    expect(got[29_999]).toBe('r-29999');
    expect(log.written).toBe(30_000);
    expect(log.dropped).toBe(0);
    await log.close();
  });

  it('records with non-ASCII values between ASCII ones are written as UTF-8, each line whole, both formats', async () => {
    // An ASCII line is copied byte for byte, any other encoded: a mix must come out as the lines.
    const mixed = (i: number): AccessRecord => {
      const r = record(i);
      if (i % 3 === 1) return { ...r, model_name: 'modèle-ünï', selected_pod: 'pod-é' };
      if (i % 3 === 2) return { ...r, status_code: 404, error: { type: 'model_not_found', message: 'model "мир" is not served by any route' } };
      return r;
    };
    for (const format of ['json', 'text'] as const) {
      const file = join(dir, `mixed-${format}.log`);
      const log = createAccessLog(parseAccessLogSettings({ ACCESS_LOG_FORMAT: format, ACCESS_LOG_OUTPUT: file }));
      for (let i = 0; i < 300; i++) log.log(mixed(i));
      await log.close();
      const expected = Array.from({ length: 300 }, (_, i) => (format === 'json' ? formatJson(mixed(i)) : formatText(mixed(i))));
      expect(readFileSync(file, 'utf8')).toBe(expected.join('\n') + '\n');
    }
  });

  it('reopen() after a rename writes to a new file at the configured path', async () => {
    const file = join(dir, 'rotate.log');
    const log = createAccessLog(parseAccessLogSettings({ ACCESS_LOG_FORMAT: 'json', ACCESS_LOG_OUTPUT: file }));
    for (let i = 0; i < 100; i++) log.log(record(i));
    await log.flush();
    renameSync(file, file + '.1');
    for (let i = 100; i < 150; i++) log.log(record(i)); // still to the renamed file's descriptor or the new one
    log.reopen();
    for (let i = 150; i < 200; i++) log.log(record(i));
    await log.flush();
    await log.close();
    const old = ids(file + '.1');
    const fresh = ids(file);
    expect(old.slice(0, 100)).toEqual(Array.from({ length: 100 }, (_, i) => `r-${i}`));
    expect([...old, ...fresh]).toEqual(Array.from({ length: 200 }, (_, i) => `r-${i}`));
    expect(fresh.at(-1)).toBe('r-199');
  });

  it('a record is written by itself within the flush interval, without flush()', async () => {
    const file = join(dir, 'interval.log');
    const log = createAccessLog(parseAccessLogSettings({ ACCESS_LOG_FORMAT: 'json', ACCESS_LOG_OUTPUT: file, ACCESS_LOG_FLUSH_INTERVAL: '20ms' }));
    log.log(record(7));
    const deadline = Date.now() + 5000;
    while (!existsSync(file) || ids(file).length === 0) {
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(ids(file)).toEqual(['r-7']);
    await log.close();
  });

  it('every write failing (ENOSPC): records dropped and counted, flush() resolves, one warning', async () => {
    const warnings: string[] = [];
    const log = createAccessLog(parseAccessLogSettings({ ACCESS_LOG_FORMAT: 'json', ACCESS_LOG_OUTPUT: '/dev/full' }),
      { warn: (m) => { warnings.push(m); } });
    for (let i = 0; i < 5000; i++) log.log(record(i));
    await log.flush();
    expect(log.dropped).toBe(5000);
    expect(log.written).toBe(0);
    for (let i = 0; i < 10; i++) log.log(record(i));
    await log.flush();
    expect(log.dropped).toBe(5010);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/^access log: writing to \/dev\/full failed: ENOSPC.*; dropped \d+ records \(\d+ since start\)$/);
    // The failures within the minute after that warning are said at close: every dropped record is in a warning.
    await log.close();
    expect(warnings).toHaveLength(2);
    expect(warnings[1]).toMatch(/^access log: writing to \/dev\/full failed: ENOSPC.*; dropped \d+ records \(5010 since start\)$/);
    expect(droppedIn(warnings)).toBe(5010);
  });

  it('write failures within a minute of a warning are said with the next failure after the minute, counted', async () => {
    const warnings: string[] = [];
    let now = 0;
    const log = createAccessLog(parseAccessLogSettings({ ACCESS_LOG_FORMAT: 'json', ACCESS_LOG_OUTPUT: '/dev/full' }),
      { warn: (m) => { warnings.push(m); }, clock: () => now });
    log.log(record(1));
    await log.flush();
    expect(warnings).toEqual(['access log: writing to /dev/full failed: ENOSPC: no space left on device, write; dropped 1 records (1 since start)']);
    for (let i = 0; i < 3; i++) {
      now += 10_000;
      log.log(record(i));
      await log.flush();
    }
    expect(warnings).toHaveLength(1);
    now += 60_000;
    log.log(record(9));
    await log.flush();
    expect(warnings[1]).toBe('access log: writing to /dev/full failed: ENOSPC: no space left on device, write; dropped 4 records (5 since start)');
    await log.close();
    expect(warnings).toHaveLength(2); // nothing left to say
    expect(droppedIn(warnings)).toBe(log.dropped);
  });

  it('records logged while close() runs are dropped, counted and reported as late, not as a log that does not keep up', async () => {
    const warnings: string[] = [];
    const file = join(dir, 'closing.log');
    const log = createAccessLog(parseAccessLogSettings({ ACCESS_LOG_OUTPUT: file }), { warn: (m) => { warnings.push(m); } });
    log.log(record(1));
    const closing = log.close();
    log.log(record(2));
    log.log(record(3));
    await closing;
    expect(log.dropped).toBe(2);
    expect(warnings).toEqual(['access log: dropped 2 records of requests that ended after the log was closed (the router was stopping; 2 dropped since start)']);
    expect(readFileSync(file, 'utf8').split('\n')).toHaveLength(2);
  });

  it('records logged after close() are dropped and counted', async () => {
    const file = join(dir, 'closed.log');
    const log = createAccessLog(parseAccessLogSettings({ ACCESS_LOG_OUTPUT: file }));
    log.log(record(1));
    await log.close();
    log.log(record(2));
    expect(log.dropped).toBe(1);
    expect(log.written).toBe(1);
    const lines = readFileSync(file, 'utf8').split('\n');
    expect(lines).toHaveLength(2);
    expect(parseTextLine(lines[0] as string).fields.request_id).toBe('r-1');
  });

  it('disabled: nothing is opened or written', async () => {
    const file = join(dir, 'disabled.log');
    const log = createAccessLog(parseAccessLogSettings({ ACCESS_LOG_ENABLED: 'false', ACCESS_LOG_OUTPUT: file }));
    expect(log.enabled).toBe(false);
    log.log(record(1));
    await log.flush();
    await log.close();
    expect(existsSync(file)).toBe(false);
    expect(log.written).toBe(0);
  });

  it('a path that cannot be opened fails at creation with a clear message', () => {
    expect(() => createAccessLog(parseAccessLogSettings({ ACCESS_LOG_OUTPUT: join(dir, 'missing/dir/a.log') })))
      .toThrow(`ACCESS_LOG_OUTPUT: cannot append to "${join(dir, 'missing/dir/a.log')}": its directory "${join(dir, 'missing/dir')}" does not exist (the router creates the file, not its directories)`);
    expect(() => createAccessLog(parseAccessLogSettings({ ACCESS_LOG_OUTPUT: dir })))
      .toThrow(/^ACCESS_LOG_OUTPUT: cannot append to ".*": it is a directory/);
  });

  it('a symbolic link whose target is missing names the target\'s directory; a link to a file in an existing one is followed', async () => {
    const link = join(dir, 'dangling.log');
    symlinkSync(join(dir, 'missingdir', 'real.log'), link);
    expect(() => checkAccessLogOutput(link))
      .toThrow(`ACCESS_LOG_OUTPUT: cannot append to "${link}": its directory "${join(dir, 'missingdir')}" does not exist (the router creates the file, not its directories)`);
    const ok = join(dir, 'ok.log');
    symlinkSync(join(dir, 'target.log'), ok);
    expect(() => checkAccessLogOutput(ok)).not.toThrow();
    expect(existsSync(join(dir, 'target.log'))).toBe(true);
  });

  it('a path in /proc or /sys (a kernel interface; as root many of its files take a write) is refused, before anything is written; a file reached through /proc\'s links is not', () => {
    for (const [path, where] of [['/proc/sys/kernel/hostname', '/proc'], ['/proc/new.log', '/proc'], ['/sys/kernel/mm/transparent_hugepage/enabled', '/sys']] as const) {
      if (!existsSync(dirname(path))) continue;
      const before = existsSync(path) ? readFileSync(path, 'utf8') : null;
      expect(() => checkAccessLogOutput(path)).toThrow(`ACCESS_LOG_OUTPUT: cannot append to "${path}": it is in ${where}, a kernel interface, not a place for a log`);
      if (before !== null) expect(readFileSync(path, 'utf8')).toBe(before);
    }
    // A file reached through /proc's links (as /dev/stdout reaches a redirected stdout) is the file's.
    const fd = openSync(join(dir, 'through-proc.log'), 'a');
    try {
      expect(() => checkAccessLogOutput(`/proc/self/fd/${fd}`)).not.toThrow();
    } finally {
      closeSync(fd);
    }
  });

  it('a path under a file (taken for a directory) is named as such, not a bare ENOTDIR', () => {
    const file = join(dir, 'plain-file');
    writeFileSync(file, 'x');
    for (const under of [join(file, 'a.log'), join(file, 'sub', 'a.log')]) {
      expect(() => createAccessLog(parseAccessLogSettings({ ACCESS_LOG_OUTPUT: under })))
        .toThrow(`ACCESS_LOG_OUTPUT: cannot append to "${under}": its directory "${dirname(under)}" is not a directory (a part of it is a file)`);
    }
  });
});
