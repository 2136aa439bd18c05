import { accessSync, constants, fstatSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import sonicBoom from 'sonic-boom';
import type { SonicBoom } from 'sonic-boom';
import { MAX_RECORD_BYTES } from './access-log-format.js';

/**
 * Opens the access-log destination as a non-blocking sonic-boom stream, configured so that
 * every write(2) it issues holds whole records only (docs/access-log.md, "Guarantees").
 *
 * How sonic-boom 5.0.2 (index.js) cuts writes, and why whole records survive:
 * - `write(data)` (buffer mode: `writeBuffer`) adds `data` to its last queued chunk only when
 *   the sum stays <= maxWrite, else starts a new chunk; it never splits `data`. We hand it
 *   whole-record batches of at most `batchBytes` == maxWrite bytes, so every chunk is whole
 *   records and <= maxWrite bytes (a single `data` larger than maxWrite would be written
 *   whole, too: it is never cut, but we never hand one over).
 * - `actualWriteBuffer` issues one fs.write of one chunk (Buffer.concat of its parts). After a
 *   short write `release` writes the rest of that chunk; a write of <= PIPE_BUF (4096) bytes to
 *   a pipe is all-or-nothing (EAGAIN when full, which sonic-boom retries later with the whole
 *   chunk), so on pipes there are no short writes. Regular files only write short when full.
 * - `flushSync`/`flushBufferSync` also write queued chunks one by one; we do not call them.
 * - `minLength` stays 0: no chunk waits for a size; `flush()` only drains.
 * - `maxLength` is the queue bound: a `write()` that would exceed it is refused with a 'drop'
 *   event (synchronously), which the writer counts.
 */

/** Output types that keep a write atomic only up to PIPE_BUF: pipes, sockets, terminals. */
const PIPE_MAX_WRITE = MAX_RECORD_BYTES;
/** Regular files opened O_APPEND: whole-record writes up to sonic-boom's default size. */
const FILE_MAX_WRITE = 16 * 1024;

export interface Sink {
  readonly stream: SonicBoom;
  /** Largest batch to hand to `stream.write` (== its maxWrite). */
  readonly batchBytes: number;
  /** A file path that `reopen()` can open again; null for stdout/stderr. */
  readonly path: string | null;
}

function isRegularFile(fd: number): boolean {
  try {
    return fstatSync(fd).isFile();
  } catch {
    return false;
  }
}

/**
 * Checks without opening (opening and closing a FIFO would hand its reader an end-of-file) that
 * `path` can be appended to; returns whether it is (or will be created as) a regular file.
 */
function checkPath(path: string): boolean {
  try {
    const st = statSync(path, { throwIfNoEntry: false });
    if (st?.isDirectory()) throw new Error('it is a directory');
    accessSync(st === undefined ? dirname(path) : path, constants.W_OK);
    return st === undefined || st.isFile();
  } catch (err) {
    throw new Error(`ACCESS_LOG_OUTPUT: cannot append to ${JSON.stringify(path)}: ${(err as Error).message}`);
  }
}

/**
 * The primary's check, before any worker starts, that the workers will be able to open
 * `output`; throws an Error naming ACCESS_LOG_OUTPUT. stdout and stderr are always accepted.
 */
export function checkAccessLogOutput(output: string): void {
  if (output !== 'stdout' && output !== 'stderr') checkPath(output);
}

export function maxWriteFor(regularFile: boolean): number {
  return regularFile ? FILE_MAX_WRITE : PIPE_MAX_WRITE;
}

/** Opens `output` ('stdout', 'stderr' or a path). Throws a clear error when a path cannot be appended to. */
export function openSink(output: string, bufferBytes: number): Sink {
  let fd: number | string;
  let regular: boolean;
  let path: string | null = null;
  if (output === 'stdout' || output === 'stderr') {
    fd = output === 'stdout' ? 1 : 2;
    regular = isRegularFile(fd);
  } else {
    regular = checkPath(output);
    fd = output;
    path = output;
  }
  const maxWrite = maxWriteFor(regular);
  const stream = new sonicBoom.SonicBoom({
    dest: fd,
    sync: false,
    append: true,
    minLength: 0,
    maxWrite,
    maxLength: bufferBytes,
    // Buffers: our batches are already UTF-8 and sonic-boom writes them without re-encoding.
    contentMode: 'buffer',
  });
  return { stream, batchBytes: maxWrite, path };
}
