import { rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';

/**
 * A stand-in for systemd-journald's stdout socket, speaking its stream protocol (a client first
 * writes seven header lines: identifier, unit id, priority, level prefix, forward to syslog, to
 * kmsg, to the console; then messages, one per line) and shutting its side of each stream for
 * writing as journald does. For the writer's unit tests, which stall, cut and refuse streams at
 * will; the end-to-end tests run a real journald (journald.ts).
 */
export interface JournalStream {
  /** The seven header lines, once all arrived. */
  header: string[] | null;
  /** Whole message lines after the header, in order. */
  lines: string[];
  /** The client closed its end. */
  ended: boolean;
  readonly socket: Socket;
}

export interface MockJournal {
  readonly path: string;
  readonly streams: JournalStream[];
  /** Lines of every stream whose identifier is `identifier`. */
  linesOf(identifier: string): string[];
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

export async function startMockJournal(dir: string, name = 'stdout'): Promise<MockJournal> {
  const path = join(dir, name);
  const streams: JournalStream[] = [];
  let paused = false;
  let refusing = false;
  const server: Server = createServer((socket) => {
    if (refusing) {
      socket.destroy();
      return;
    }
    const stream: JournalStream = { header: null, lines: [], ended: false, socket };
    streams.push(stream);
    let pending = '';
    const header: string[] = [];
    socket.setEncoding('utf8');
    // As journald does: it never writes to a stream, and shuts that side at once.
    socket.end();
    if (paused) socket.pause();
    socket.on('data', (chunk: string) => {
      pending += chunk;
      let nl: number;
      while ((nl = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        if (stream.header === null) {
          header.push(line);
          if (header.length === HEADER_LINES) stream.header = header;
        } else stream.lines.push(line);
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
