import { fstatSync, rmSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';

/**
 * A stand-in for systemd-journald's stdout socket, speaking its stream protocol (a client first
 * writes seven header lines: identifier, unit id, priority, level prefix, forward to syslog, to
 * kmsg, to the console; then messages, one per line) and shutting its side of each stream for
 * writing as journald does. For the writer's unit tests, which stall, cut and refuse streams at
 * will, and the journal micro benchmark (which only counts the lines); the end-to-end tests run a
 * real journald (journald.ts).
 */
export interface JournalStream {
  /** The seven header lines, once all arrived. */
  header: string[] | null;
  /** Whole message lines after the header, in order (none kept with `keepLines: false`). */
  lines: string[];
  /** Message lines after the header so far. */
  count: number;
  /** The client closed its end. */
  ended: boolean;
  readonly socket: Socket;
}

export interface MockJournal {
  readonly path: string;
  readonly streams: JournalStream[];
  /** Lines of every stream whose identifier is `identifier`. */
  linesOf(identifier: string): string[];
  /** How many lines the streams whose identifier is `identifier` carried. */
  countOf(identifier: string): number;
  /** Stops reading every stream (the journal falls behind) or reads again. */
  pause(paused: boolean): void;
  /** Closes every open stream, as a journald restart does. */
  dropStreams(): void;
  /** Closes every new stream as it is accepted (journald past its limit of streams) or not. */
  refuse(on: boolean): void;
  /** Stops listening and removes the socket (open streams stay until dropped). */
  close(): Promise<void>;
}

const HEADER_LINES = 7;

/** `keepLines: false` counts the lines without keeping them (a benchmark's millions). */
export async function startMockJournal(dir: string, name = 'stdout', opts: { keepLines?: boolean } = {}): Promise<MockJournal> {
  const keepLines = opts.keepLines ?? true;
  const path = join(dir, name);
  const streams: JournalStream[] = [];
  let paused = false;
  let refusing = false;
  const server: Server = createServer((socket) => {
    if (refusing) {
      socket.destroy();
      return;
    }
    const stream: JournalStream = { header: null, lines: [], count: 0, ended: false, socket };
    streams.push(stream);
    let pending = '';
    const header: string[] = [];
    socket.setEncoding(keepLines ? 'utf8' : 'latin1');
    // As journald does: it never writes to a stream, and shuts that side at once.
    socket.end();
    if (paused) socket.pause();
    socket.on('data', (chunk: string) => {
      pending += chunk;
      let nl: number;
      while (stream.header === null && (nl = pending.indexOf('\n')) >= 0) {
        header.push(pending.slice(0, nl));
        pending = pending.slice(nl + 1);
        if (header.length === HEADER_LINES) stream.header = header;
      }
      if (stream.header === null) return;
      if (!keepLines) {
        for (let i = pending.indexOf('\n'); i >= 0; i = pending.indexOf('\n', i + 1)) stream.count++;
        pending = '';
        return;
      }
      while ((nl = pending.indexOf('\n')) >= 0) {
        stream.lines.push(pending.slice(0, nl));
        stream.count++;
        pending = pending.slice(nl + 1);
      }
    });
    socket.on('end', () => { stream.ended = true; });
    socket.on('error', () => { stream.ended = true; });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, resolve);
  });
  return {
    path,
    streams,
    linesOf: (identifier) => streams.filter((s) => s.header?.[0] === identifier).flatMap((s) => s.lines),
    countOf: (identifier) => streams.filter((s) => s.header?.[0] === identifier).reduce((n, s) => n + s.count, 0),
    pause(p) {
      paused = p;
      for (const s of streams) {
        if (p) s.socket.pause();
        else s.socket.resume();
      }
    },
    dropStreams() {
      for (const s of streams) s.socket.destroy();
    },
    refuse(on) {
      refusing = on;
    },
    async close() {
      // Not waiting for the open streams (server.close's callback would).
      server.close();
      rmSync(path, { force: true });
      await new Promise((resolve) => setImmediate(resolve));
    },
  };
}

/**
 * A stream to the journal socket at `path` as systemd makes a service's stdout (real journald or
 * the stand-in): connected, left half-open (journald shuts its side at once), headed with the
 * service's `identifier`, priority info. Its descriptor, to hand a process as stdout (and stderr),
 * and the JOURNAL_STREAM value (device:inode) systemd would set for it. `levelPrefix`: journald reads
 * a `<N>` at a line's start as its priority, as systemd asks of a service's stream by default
 * (SyslogLevelPrefix=yes); off unless asked.
 */
export async function serviceStdout(path: string, identifier: string, opts: { levelPrefix?: boolean } = {}): Promise<{ socket: Socket; fd: number; journalStream: string }> {
  const socket = connect({ path, allowHalfOpen: true });
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  socket.write(`${identifier}\n\n6\n${opts.levelPrefix === true ? 1 : 0}\n0\n0\n0\n`);
  const fd = (socket as unknown as { _handle: { fd: number } })._handle.fd;
  const st = fstatSync(fd, { bigint: true });
  return { socket, fd, journalStream: `${st.dev}:${st.ino}` };
}
