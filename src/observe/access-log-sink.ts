import { accessSync, closeSync, constants, fstatSync, lstatSync, openSync, readlinkSync, statfsSync, statSync, type Stats } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { MAX_RECORD_BYTES } from './access-log-format.js';
import { isJournalStream } from './journal-stream.js';

/**
 * Resolves the access-log destination and the largest write that keeps records whole across
 * processes (docs/access-log.md, "Guarantees"): to a pipe, socket or terminal at most PIPE_BUF
 * (4096) bytes per write(2), which Linux keeps atomic for pipes; to a regular file opened
 * O_APPEND, whole-record writes up to FILE_MAX_WRITE, each one call (local Linux file systems
 * hold the inode lock for a whole write). The writer (access-log-fd-writer.ts) writes each
 * batch of whole records with one call; a short write (a full disk) writes the rest next.
 */

/** Output types that keep a write atomic only up to PIPE_BUF: pipes, sockets, terminals. */
const PIPE_MAX_WRITE = MAX_RECORD_BYTES;
/** Regular files opened O_APPEND: whole-record writes of up to 64 KiB (fewer, larger writes). */
export const FILE_MAX_WRITE = 64 * 1024;

export interface Sink {
  /** 1 or 2 for stdout/stderr; -1 for a path (the writer opens it). */
  readonly fd: number;
  /** Largest batch of whole records to write with one call. */
  readonly batchBytes: number;
  /** A file path that `reopen()` can open again; null for stdout/stderr. */
  readonly path: string | null;
  /** A regular file (or a path that will be created as one): written on the event loop (access-log-fd-writer.ts). */
  readonly regularFile: boolean;
  /**
   * stdout/stderr is the journal's stream (JOURNAL_STREAM) and the records go through a stream of
   * the process's own to this socket (access-log-journal.ts); null otherwise.
   */
  readonly journalSocket: string | null;
}

function isRegularFile(fd: number): boolean {
  try {
    return fstatSync(fd).isFile();
  } catch {
    return false;
  }
}

/**
 * The path's stat, or undefined when nothing is there (ENOENT); any other failure throws, ENOTDIR
 * (a part of the path is a file) included. Not `statSync(path, { throwIfNoEntry: false })`: on
 * Node 22 and 24 that returns undefined for ENOTDIR as well (nodejs/node#56993; Node 20 throws),
 * which let a path under a file pass this check and every record then fail in the workers.
 */
/** Where the symbolic link `path` points when it is one (its target missing, as stat found), else null. */
function danglingLinkTarget(path: string): string | null {
  try {
    if (!lstatSync(path).isSymbolicLink()) return null;
    return resolve(dirname(path), readlinkSync(path));
  } catch {
    return null;
  }
}

function statIfPresent(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * Checks that `path` can be appended to; returns whether it is (or will be created as) a regular
 * file. A regular file, or a missing one, is opened for appending (and created: the workers would
 * create it): write permission says nothing of /proc or /sys, whose files refuse it. Anything
 * else is not opened (opening and closing a FIFO would hand its reader an end-of-file).
 */
function checkPath(path: string): boolean {
  let dir = dirname(path);
  try {
    const st = statIfPresent(path);
    if (st?.isDirectory()) throw new Error('it is a directory');
    // open(2) of a Unix socket fails (ENXIO), also through /dev/stdout when stdout is one (the systemd journal).
    if (st?.isSocket()) throw new Error('it is a socket, which cannot be opened for writing (for the router\'s own stdout or stderr, use stdout or stderr)');
    // A missing file: its directory must exist (a file in the path throws ENOTDIR above); through a
    // symbolic link whose target is missing, the target's directory.
    if (st === undefined) {
      const target = danglingLinkTarget(path);
      if (target !== null) dir = dirname(target);
      if (statIfPresent(dir) === undefined) {
        throw new Error(`its directory ${JSON.stringify(dir)} does not exist (the router creates the file, not its directories)`);
      }
    }
    // The kernel's interfaces show their files as regular ones, and as root many take a write: an
    // access log there would write its lines into kernel settings (/proc/sys) or device attributes.
    const kernel = kernelInterface(st === undefined ? dir : path);
    if (kernel !== null) throw new Error(`it is in ${kernel}, a kernel interface, not a place for a log`);
    if (st === undefined || st.isFile()) {
      closeSync(openSync(path, 'a'));
      return true;
    }
    accessSync(path, constants.W_OK);
    return false;
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code === 'ENOTDIR'
      ? `its directory ${JSON.stringify(dir)} is not a directory (a part of it is a file)`
      : (err as Error).message;
    throw new Error(`ACCESS_LOG_OUTPUT: cannot append to ${JSON.stringify(path)}: ${why}`);
  }
}

/** The file systems of /proc and /sys (statfs(2) f_type), by what they are called. */
const KERNEL_FILESYSTEMS = new Map<number, string>([[0x9fa0, '/proc'], [0x62656572, '/sys']]);

/** `/proc` or `/sys` when `path` (followed through links, as an open would) is on one; else null. */
function kernelInterface(path: string): string | null {
  let type: number;
  try {
    type = statfsSync(path).type;
  } catch {
    return null;
  }
  return KERNEL_FILESYSTEMS.get(type) ?? null;
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

/**
 * Resolves `output` ('stdout', 'stderr' or a path). Throws a clear error when a path cannot be
 * appended to. `journalSocket` (ACCESS_LOG_JOURNAL_SOCKET; null: off) is used when stdout/stderr
 * is the journal's stream by `env`'s JOURNAL_STREAM.
 */
export function openSink(output: string, journalSocket: string | null = null, env: NodeJS.ProcessEnv = process.env): Sink {
  if (output === 'stdout' || output === 'stderr') {
    const fd = output === 'stdout' ? 1 : 2;
    const regularFile = isRegularFile(fd);
    const journal = journalSocket !== null && isJournalStream(fd, env.JOURNAL_STREAM) ? journalSocket : null;
    return { fd, batchBytes: maxWriteFor(regularFile), path: null, regularFile, journalSocket: journal };
  }
  const regularFile = checkPath(output);
  return { fd: -1, batchBytes: maxWriteFor(regularFile), path: output, regularFile, journalSocket: null };
}
