import { closeSync, fstatSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isJournalStream } from '../../../src/observe/journal-stream.js';
import { serviceStdout, startMockJournal } from '../../helpers/mock-journal.js';

let dir = '';
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'journal-stream-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('JOURNAL_STREAM: is this descriptor the journal\'s stream', () => {
  it('a socket whose device and inode JOURNAL_STREAM names is; another inode, a file, or no variable is not', async () => {
    const journal = await startMockJournal(dir, 'detect');
    const { socket, fd, journalStream } = await serviceStdout(journal.path, 'unit');
    try {
      const st = fstatSync(fd, { bigint: true });
      expect(journalStream).toBe(`${st.dev}:${st.ino}`);
      expect(isJournalStream(fd, journalStream)).toBe(true);
      expect(isJournalStream(fd, `${st.dev}:${st.ino + 1n}`)).toBe(false);
      expect(isJournalStream(fd, undefined)).toBe(false);
      expect(isJournalStream(fd, `${st.dev}:${st.ino}x`)).toBe(false);
      const file = openSync(join(dir, 'not-a-socket'), 'w');
      const fst = fstatSync(file, { bigint: true });
      expect(isJournalStream(file, `${fst.dev}:${fst.ino}`)).toBe(false);
      closeSync(file);
    } finally {
      socket.destroy();
      await journal.close();
    }
  });
});
