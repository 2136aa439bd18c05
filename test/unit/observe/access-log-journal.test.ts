import { closeSync, fstatSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JOURNAL_IDENTIFIER, JournalStreamWriter, journalStreamHeader, SHORT_LIVED_STREAM_MS } from '../../../src/observe/access-log-journal.js';
import { openSink } from '../../../src/observe/access-log-sink.js';
import { serviceStdout, startMockJournal, type MockJournal } from '../../helpers/mock-journal.js';
import { waitFor } from '../../helpers/processes.js';

let dir = '';
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'journal-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const batch = (from: number, n: number): Buffer => Buffer.from(Array.from({ length: n }, (_, i) => `record ${from + i}\n`).join(''));
const records = (from: number, n: number): string[] => Array.from({ length: n }, (_, i) => `record ${from + i}`);

interface Harness {
  journal: MockJournal;
  warnings: string[];
  failed: [number, string][];
  writer(opts?: { fd?: number; maxQueued?: number; path?: string; now?: () => number }): JournalStreamWriter;
  /** The writers' clock (ms), moved by the tests. */
  clock: { ms: number };
}

async function harness(name: string): Promise<Harness> {
  const journal = await startMockJournal(dir, name);
  const warnings: string[] = [];
  const failed: [number, string][] = [];
  const clock = { ms: 0 };
  return {
    journal,
    warnings,
    failed,
    clock,
    writer: (opts = {}) => new JournalStreamWriter({
      path: opts.path ?? journal.path,
      fd: opts.fd ?? 1,
      output: 'stdout',
      maxQueued: opts.maxQueued ?? 1 << 20,
      onFailed: (n, err) => failed.push([n, err.code ?? err.message]),
      warn: (m) => warnings.push(m),
      now: opts.now ?? (() => clock.ms),
    }),
  };
}

describe('the access log\'s own stream to the journal', () => {
  it('opens with sd_journal_stream_fd\'s header (its identifier, info, no level prefix, no forwarding) and writes batches in order', async () => {
    const h = await harness('order');
    const w = h.writer();
    // Pushed before the connection is made: they wait for it, after the header.
    expect(w.push(batch(0, 3), 3)).toBe(true);
    expect(w.push(batch(3, 2), 2)).toBe(true);
    await w.flush();
    expect(w.push(batch(5, 1), 1)).toBe(true);
    await w.flush();
    await waitFor('the records', () => h.journal.linesOf(JOURNAL_IDENTIFIER).length === 6);
    expect(h.journal.streams).toHaveLength(1);
    expect(h.journal.streams[0]!.header).toEqual([JOURNAL_IDENTIFIER, '', '6', '0', '0', '0', '0']);
    expect(h.journal.linesOf(JOURNAL_IDENTIFIER)).toEqual(records(0, 6));
    expect(journalStreamHeader('x').toString()).toBe('x\n\n6\n0\n0\n0\n0\n');
    expect(w.queuedRecords).toBe(0);
    await w.close();
    await waitFor('the stream ended', () => h.journal.streams[0]!.ended);
    expect([h.warnings, h.failed]).toEqual([[], []]);
    expect(w.push(batch(9, 1), 1)).toBe(false);
    await h.journal.close();
  });

  it('no journal at the path: said once, and the records go to the inherited descriptor instead', async () => {
    const h = await harness('unused');
    const file = join(dir, 'inherited.log');
    const fd = openSync(file, 'a');
    const w = h.writer({ fd, path: join(dir, 'no-such-socket') });
    expect(w.push(batch(0, 2), 2)).toBe(true);
    await w.flush();
    expect(w.push(batch(2, 1), 1)).toBe(true);
    await w.flush();
    expect(w.onInheritedDescriptor).toBe(true);
    expect(readFileSync(file, 'utf8')).toBe(batch(0, 3).toString());
    expect(h.warnings).toHaveLength(1);
    expect(h.warnings[0]).toMatch(/^access log: cannot open a stream to the journal at \S+no-such-socket \(.*ENOENT.*\); writing to stdout on the thread pool instead$/);
    expect(h.failed).toEqual([]);
    await w.close();
    closeSync(fd);
    await h.journal.close();
  });

  it('the journal closes the stream (a restart): the next write finds it gone; another is opened, with its header, and that batch and the later ones go there', async () => {
    const h = await harness('restart');
    const w = h.writer();
    w.push(batch(0, 2), 2);
    await w.flush();
    await waitFor('the first records', () => h.journal.linesOf(JOURNAL_IDENTIFIER).length === 2);
    h.clock.ms += SHORT_LIVED_STREAM_MS;
    h.journal.dropStreams();
    w.push(batch(2, 2), 2);
    w.push(batch(4, 1), 1);
    await w.flush();
    await waitFor('the later records', () => h.journal.linesOf(JOURNAL_IDENTIFIER).length === 5);
    expect(h.journal.streams).toHaveLength(2);
    expect(h.journal.streams[1]!.header?.[0]).toBe(JOURNAL_IDENTIFIER);
    expect(h.journal.streams[1]!.lines).toEqual(records(2, 3));
    expect(h.warnings).toHaveLength(2);
    expect(h.warnings[0]).toMatch(/^access log: the stream to the journal at \S+ was closed \(.+\); opening another$/);
    expect(h.warnings[1]).toMatch(/^access log: a stream to the journal at \S+ is open again$/);
    expect(h.failed).toEqual([]);
    expect(w.onInheritedDescriptor).toBe(false);
    await w.close();
    await h.journal.close();
  });

  /**
   * A writer whose inherited descriptor is a file: one record reaches the journal, the clock moves
   * `lived` ms, `lose` ends the stream; the next two records find it gone, and the writer gives
   * the journal up and writes them to the file. Returns the harness (its warnings, its journal's streams).
   */
  async function lostAfterFirstRecord(name: string, lived: number, lose: (journal: MockJournal) => Promise<void>): Promise<Harness> {
    const h = await harness(name);
    const file = join(dir, `${name}.log`);
    const fd = openSync(file, 'a');
    const w = h.writer({ fd });
    try {
      w.push(batch(0, 1), 1);
      await w.flush();
      await waitFor('the first record', () => h.journal.linesOf(JOURNAL_IDENTIFIER).length === 1);
      h.clock.ms += lived;
      await lose(h.journal);
      w.push(batch(1, 2), 2);
      await waitFor('the writer to give the journal up', () => w.onInheritedDescriptor);
      await w.flush();
      expect(readFileSync(file, 'utf8')).toBe(batch(1, 2).toString());
      expect(h.failed).toEqual([]);
    } finally {
      await w.close();
      closeSync(fd);
      await h.journal.close();
    }
    return h;
  }

  it('the journal closes the stream and is gone: the batch that found it gone, and the later ones, go to the inherited descriptor', async () => {
    const h = await lostAfterFirstRecord('gone', SHORT_LIVED_STREAM_MS, async (journal) => {
      await journal.close();
      journal.dropStreams();
    });
    expect(h.warnings).toHaveLength(2);
    expect(h.warnings[1]).toMatch(/^access log: cannot open a stream to the journal at \S+ \(.+\); writing to stdout on the thread pool instead$/);
  });

  it('a stream the journal closes right after it opened (journald refusing more streams): not opened again; the inherited descriptor is used', async () => {
    const h = await lostAfterFirstRecord('refusing', SHORT_LIVED_STREAM_MS - 1, async (journal) => journal.dropStreams());
    expect(h.journal.streams).toHaveLength(1);
    expect(h.warnings).toHaveLength(1);
    expect(h.warnings[0]).toMatch(new RegExp(`^access log: cannot open a stream to the journal at \\S+ \\(.+, ${SHORT_LIVED_STREAM_MS - 1} ms after it was opened\\); writing to stdout on the thread pool instead$`));
  });

  it('a stream the journal closed before it took a record (accepted and closed at once): not opened again, however long ago it was opened', async () => {
    const h = await harness('refused-at-once');
    h.journal.refuse(true);
    const file = join(dir, 'refused-at-once.log');
    const fd = openSync(file, 'a');
    // Every reading of the clock is long after the last: only "took no record" can tell this stream from a restart.
    const w = h.writer({ fd, now: () => (h.clock.ms += 10 * SHORT_LIVED_STREAM_MS) });
    try {
      w.push(batch(0, 2), 2);
      await waitFor('the writer to give the journal up', () => w.onInheritedDescriptor);
      await w.flush();
      expect(readFileSync(file, 'utf8')).toBe(batch(0, 2).toString());
      expect(h.warnings).toEqual([expect.stringMatching(/^access log: cannot open a stream to the journal at \S+ \(.+, before it took a record\); writing to stdout on the thread pool instead$/)]);
      expect(h.failed).toEqual([]);
    } finally {
      await w.close();
      closeSync(fd);
      await h.journal.close();
    }
  });

  it('a journal that falls behind: queued bytes are bounded (push refuses beyond), and what was taken arrives whole once it reads again', async () => {
    const h = await harness('behind');
    const w = h.writer({ maxQueued: 256 * 1024 });
    w.push(batch(0, 1), 1);
    await w.flush();
    await waitFor('connected', () => h.journal.streams.length === 1 && h.journal.streams[0]!.header !== null);
    h.journal.pause(true);
    const piece = batch(0, 400); // about 4.5 KB
    let accepted = 1;
    let refused = 0;
    for (let i = 0; i < 400; i++) {
      if (w.push(piece, 400)) accepted += 400;
      else refused++;
    }
    expect(refused).toBeGreaterThan(0);
    expect(w.queuedRecords).toBeGreaterThan(0);
    const flushed = w.flush();
    h.journal.pause(false);
    await flushed;
    await waitFor('every accepted record', () => h.journal.linesOf(JOURNAL_IDENTIFIER).length === accepted, 15_000);
    expect(w.queuedRecords).toBe(0);
    expect(h.failed).toEqual([]);
    await w.close();
    await h.journal.close();
  });
});

describe('the access log\'s sink under the journal', () => {
  it('openSink uses the journal socket only for stdout/stderr that JOURNAL_STREAM names, and not when it is off', () => {
    // This process's stdout is not the journal's stream.
    expect(openSink('stdout', '/run/systemd/journal/stdout', { JOURNAL_STREAM: '1:1' }).journalSocket).toBeNull();
    const st = fstatSync(1, { bigint: true });
    const here = { JOURNAL_STREAM: `${st.dev}:${st.ino}` };
    expect(openSink('stdout', '/run/systemd/journal/stdout', here).journalSocket).toBe(st.isSocket() ? '/run/systemd/journal/stdout' : null);
    expect(openSink('stdout', null, here).journalSocket).toBeNull();
    expect(openSink(join(dir, 'a.log'), '/run/systemd/journal/stdout', here).journalSocket).toBeNull();
  });
});
