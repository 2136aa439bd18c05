import { spawnSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, readdirSync, readFileSync, readlinkSync, readSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ASYNC_AFTER_SLOW_MS, FdWriter, SLOW_WRITE_MS } from '../../../src/observe/access-log-fd-writer.js';
import { openSink } from '../../../src/observe/access-log-sink.js';
import { createAccessLog } from '../../../src/observe/access-log.js';
import { parseAccessLogSettings } from '../../../src/observe/access-log-settings.js';

let dir = '';
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'fd-writer-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const line = (i: number): Buffer => Buffer.from(`record ${i}\n`);
const failed: [number, string][] = [];
const onFailed = (records: number, err: NodeJS.ErrnoException): void => {
  failed.push([records, err.code ?? '']);
};

/** A writer for a fresh file whose descriptor is open (the open is asynchronous). */
async function opened(name: string, opts: ConstructorParameters<typeof FdWriter>[4]): Promise<{ w: FdWriter; file: string }> {
  const file = join(dir, name);
  const w = new FdWriter(file, -1, 1 << 20, onFailed, opts);
  await w.flush();
  return { w, file };
}

/** A FIFO made in the test directory, its read end opened non-blocking (to read what was written without waiting). */
function fifoWithReader(name: string): { fifo: string; reader: number } {
  const fifo = join(dir, name);
  expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
  return { fifo, reader: openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK) };
}

describe('the access-log fd writer, writes on the event loop', () => {
  it('writes to a regular file within push(): nothing pending, the bytes are in the file', async () => {
    const { w, file } = await opened('sync.log', { syncWrites: true });
    expect(w.onThreadPool).toBe(false);
    for (let i = 0; i < 3; i++) {
      expect(w.push(line(i), 1)).toBe(true);
      expect(w.pendingBytes).toBe(0);
    }
    expect(readFileSync(file, 'utf8')).toBe('record 0\nrecord 1\nrecord 2\n');
    await w.close();
  });

  it('a pipe (stdout, or a FIFO path) is written within push() through a non-blocking description of its own; the one it came as is left as it was', async () => {
    const { fifo, reader } = fifoWithReader('own.fifo');
    const stdout = openSync(fifo, constants.O_WRONLY); // blocking, as a runtime hands it over
    const fromFd = new FdWriter(null, stdout, 1 << 20, onFailed, {});
    const fromPath = new FdWriter(fifo, -1, 1 << 20, onFailed, {});
    await fromPath.flush();
    const flagsOf = (fd: number): number => Number.parseInt(/^flags:\s+(\d+)/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'))![1], 8);
    try {
      for (const w of [fromFd, fromPath]) {
        expect(w.onThreadPool).toBe(false);
        expect(w.push(line(1), 1)).toBe(true);
        expect(w.pendingBytes).toBe(0);
        const got = Buffer.alloc(64);
        expect(got.toString('utf8', 0, readSync(reader, got))).toBe('record 1\n');
      }
      expect(flagsOf(stdout) & constants.O_NONBLOCK).toBe(0);
    } finally {
      await fromFd.close();
      await fromPath.close();
      closeSync(stdout);
      closeSync(reader);
    }
  });

  it('a full pipe: push() never waits; the batches the pipe refuses (EAGAIN) are tried again and arrive whole, in order, once the reader reads', async () => {
    const { fifo, reader } = fifoWithReader('full.fifo');
    const stdout = openSync(fifo, constants.O_WRONLY);
    const w = new FdWriter(null, stdout, 16 << 20, onFailed, {});
    const failedBefore = failed.length;
    const batch = (i: number): Buffer => Buffer.from(`${String(i).padStart(6, '0')} ${'x'.repeat(4088)}\n`); // 4096 bytes
    const n = 64; // 256 KiB: four times what the pipe holds
    try {
      for (let i = 0; i < n; i++) expect(w.push(batch(i), 1)).toBe(true);
      expect(w.pendingBytes).toBeGreaterThan(0);
      const got: Buffer[] = [];
      const chunk = Buffer.alloc(1 << 16);
      let total = 0;
      while (total < n * 4096) {
        await new Promise((r) => setTimeout(r, 2));
        try {
          const k = readSync(reader, chunk);
          got.push(Buffer.from(chunk.subarray(0, k)));
          total += k;
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err;
        }
      }
      await w.flush();
      const text = Buffer.concat(got).toString('latin1');
      expect(text.length).toBe(n * 4096);
      expect(text.split('\n').slice(0, -1).map((l) => Number(l.slice(0, 6)))).toEqual(Array.from({ length: n }, (_, i) => i));
      expect(failed.length).toBe(failedBefore);
    } finally {
      await w.close();
      closeSync(stdout);
      closeSync(reader);
    }
  });

  it('a FIFO path reopened (SIGHUP): the writes go on through a new description of its own, the two of the old open are closed', async () => {
    const { fifo, reader } = fifoWithReader('reopen.fifo');
    /** This process's descriptors open on the FIFO (the reader's, the writer's blocking one and its own). */
    const onFifo = (): number => readdirSync('/proc/self/fd').filter((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`) === fifo;
      } catch {
        return false;
      }
    }).length;
    /** The old descriptors are closed on the thread pool, a moment after the reopen or close: waits for the count to settle. */
    const settled = async (n: number): Promise<number> => {
      for (let i = 0; i < 200 && onFifo() !== n; i++) await new Promise((r) => setTimeout(r, 5));
      return onFifo();
    };
    const w = new FdWriter(fifo, -1, 1 << 20, onFailed, {});
    await w.flush();
    const got = Buffer.alloc(64);
    try {
      expect(onFifo()).toBe(3);
      expect(w.push(line(1), 1)).toBe(true);
      w.reopen();
      await w.flush();
      expect(await settled(3)).toBe(3);
      expect(w.onThreadPool).toBe(false);
      expect(w.push(line(2), 1)).toBe(true);
      expect(w.pendingBytes).toBe(0);
      expect(got.toString('utf8', 0, readSync(reader, got))).toBe('record 1\nrecord 2\n');
      await w.close();
      expect(await settled(1)).toBe(1);
    } finally {
      await w.close();
      closeSync(reader);
    }
  });

  it('without syncWrites (sockets, terminals, a pipe that cannot be opened again) every write is on the thread pool', async () => {
    const { w, file } = await opened('async.log', {});
    expect(w.onThreadPool).toBe(true);
    w.push(line(0), 1);
    expect(w.pendingBytes).toBe(line(0).length);
    await w.flush();
    expect(w.pendingBytes).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe('record 0\n');
    await w.close();
  });

  it(`a write that takes ${SLOW_WRITE_MS} ms or more moves the writer to the thread pool for ${ASYNC_AFTER_SLOW_MS / 1000} s (injected clock)`, async () => {
    let t = 1000;
    let step = 0;
    const now = (): number => (t += step);
    const slow: number[] = [];
    const { w, file } = await opened('slow.log', { syncWrites: true, now, onSlow: (ms) => slow.push(ms) });
    step = 1; // each reading of the clock 1 ms later: a 1 ms write
    w.push(line(0), 1);
    expect(w.pendingBytes).toBe(0);
    expect(slow).toEqual([]);
    step = SLOW_WRITE_MS; // the next write "takes" SLOW_WRITE_MS
    w.push(line(1), 1);
    expect(w.pendingBytes).toBe(0); // that write was still made on the event loop
    expect(slow).toEqual([SLOW_WRITE_MS]);
    step = 0;
    expect(w.onThreadPool).toBe(true);
    w.push(line(2), 1);
    expect(w.pendingBytes).toBe(line(2).length); // now on the thread pool
    await w.flush();
    t += ASYNC_AFTER_SLOW_MS;
    expect(w.onThreadPool).toBe(false);
    w.push(line(3), 1);
    expect(w.pendingBytes).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe('record 0\nrecord 1\nrecord 2\nrecord 3\n');
    expect(slow).toHaveLength(1);
    await w.close();
  });

  it('a failing write on the event loop drops its batch, counts it, and goes on with the next', async () => {
    failed.length = 0;
    const w = new FdWriter(null, 99_999, 1 << 20, onFailed, { syncWrites: true }); // a descriptor that is not open
    expect(w.push(line(0), 3)).toBe(true);
    expect(w.push(line(1), 2)).toBe(true);
    expect(w.pendingBytes).toBe(0);
    expect(failed).toEqual([[3, 'EBADF'], [2, 'EBADF']]);
    await w.flush();
  });
});

describe('which outputs are written on the event loop', () => {
  it('a regular file (existing or to be created) is; a FIFO is not', () => {
    const existing = join(dir, 'existing.log');
    writeFileSync(existing, '');
    expect(openSink(existing).regularFile).toBe(true);
    expect(openSink(join(dir, 'new.log')).regularFile).toBe(true);
    const fifo = join(dir, 'fifo');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    expect(openSink(fifo).regularFile).toBe(false);
    expect(openSink(fifo).batchBytes).toBe(4096);
  });

  it('the access log warns once when a write to its file is slow, and keeps every record', async () => {
    const file = join(dir, 'warn.log');
    let t = 0;
    let step = 0;
    const warnings: string[] = [];
    const log = createAccessLog(parseAccessLogSettings({ ACCESS_LOG_FORMAT: 'text', ACCESS_LOG_OUTPUT: file, ACCESS_LOG_FLUSH_INTERVAL: '0' }),
      { warn: (m) => { warnings.push(m); }, now: () => (t += step) });
    const rec = (i: number) => ({
      timestamp: 0, method: 'POST', path: '/v1/completions', protocol: 'HTTP/1.1', status_code: 200, error: null,
      model_name: 'm', model_route: 'r', model_server: 's', selected_pod: 'p', request_id: `r-${i}`, input_tokens: 1,
      output_tokens: 1, duration_total: 1, duration_request_processing: 0, duration_upstream_processing: 1, duration_response_processing: 0,
    });
    step = 25;
    for (let i = 0; i < 3; i++) {
      log.log(rec(i));
      await log.flush();
    }
    await log.close();
    expect(warnings).toEqual([`access log: a write to ${file} took 25 ms; writing on the thread pool for the next ${ASYNC_AFTER_SLOW_MS / 1000} s`]);
    expect(readFileSync(file, 'utf8').trim().split('\n').map((l) => /request_id=(\S+)/.exec(l)![1])).toEqual(['r-0', 'r-1', 'r-2']);
  });
});
