import { fstatSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JOURNAL_IDENTIFIER } from '../../src/observe/access-log-journal.js';
import { startMockJournal, type MockJournal } from '../helpers/mock-journal.js';
import { postJson, resourcesFor, startMock, startRouter, tempDir, waitFor, type MockBackend } from '../helpers/processes.js';

/** The identifier systemd's own stream of the service (its stdout) carries here. */
const UNIT = 'router-unit';

/**
 * The built router under systemd, as far as it can be without systemd: its stdout is a Unix stream
 * socket to a stand-in for journald's stdout socket (test/helpers/mock-journal.ts, which speaks the
 * stream protocol), connected and headed as systemd does, and JOURNAL_STREAM names it.
 */
describe('the access log when stdout is the systemd journal (2 workers)', () => {
  let mock: MockBackend;
  let journal: MockJournal;
  let stdout: Socket;
  let env: Record<string, string>;
  beforeAll(async () => {
    mock = await startMock('pod-a');
    journal = await startMockJournal(tempDir());
    stdout = connect(journal.path);
    await new Promise<void>((resolve) => stdout.once('connect', resolve));
    stdout.write(`${UNIT}\n\n6\n0\n0\n0\n0\n`);
    const st = fstatSync(fd(), { bigint: true });
    env = { ACCESS_LOG_ENABLED: 'true', ACCESS_LOG_FORMAT: 'json', ACCESS_LOG_OUTPUT: 'stdout', JOURNAL_STREAM: `${st.dev}:${st.ino}` };
  });
  afterAll(async () => {
    stdout?.destroy();
    await journal?.close();
    await mock?.kill();
  });

  const fd = (): number => (stdout as unknown as { _handle: { fd: number } })._handle.fd;
  const ids = (lines: string[], prefix: string): string[] => lines.map((l) => JSON.parse(l) as { request_id: string })
    .map((r) => r.request_id).filter((id) => id.startsWith(prefix)).sort();
  const sent = (prefix: string, n: number): string[] => Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(2, '0')}`).sort();

  async function requests(url: string, prefix: string, n: number): Promise<void> {
    const statuses = await Promise.all(Array.from({ length: n }, async (_, i) => {
      const r = await postJson(`${url}/v1/completions`, { model: 'sf-model', prompt: 'x' }, { 'x-request-id': `${prefix}${String(i).padStart(2, '0')}` });
      await r.text();
      return r.status;
    }));
    expect(statuses.every((s) => s === 200)).toBe(true);
  }

  it('each worker opens a stream of its own (the access records\' identifier, info, no level prefix); every record arrives there, none on the inherited stdout', async () => {
    const before = journal.streams.length;
    const router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), { workers: 2, stdoutFd: fd(), env: { ...env, ACCESS_LOG_JOURNAL_SOCKET: journal.path } });
    try {
      await requests(router.url, 'own-', 30);
      await waitFor('every record in the journal', () => ids(journal.linesOf(JOURNAL_IDENTIFIER), 'own-').length === 30);
      const own = journal.streams.slice(before);
      expect(own.map((s) => s.header)).toEqual([0, 1].map(() => [JOURNAL_IDENTIFIER, '', '6', '0', '0', '0', '0']));
      expect(ids(journal.linesOf(JOURNAL_IDENTIFIER), 'own-')).toEqual(sent('own-', 30));
      expect(ids(journal.linesOf(UNIT), 'own-')).toEqual([]);
    } finally {
      expect(await router.kill()).toBe(0);
    }
    // The workers ended their streams as they stopped.
    await waitFor('the streams ended', () => journal.streams.slice(before).every((s) => s.ended));
    expect(router.stderr()).not.toMatch(/access log:/);
  });

  it('ACCESS_LOG_JOURNAL_SOCKET=off: the records go to the inherited stdout, as whole lines', async () => {
    const before = journal.streams.length;
    const router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), { workers: 2, stdoutFd: fd(), env: { ...env, ACCESS_LOG_JOURNAL_SOCKET: 'off' } });
    try {
      await requests(router.url, 'off-', 30);
      await waitFor('every record on stdout', () => ids(journal.linesOf(UNIT), 'off-').length === 30);
      expect(journal.streams.length).toBe(before);
    } finally {
      expect(await router.kill()).toBe(0);
    }
  });

  it('no journal socket at the path: each worker says so once and writes to the inherited stdout', async () => {
    const missing = join(tempDir(), 'no-journal-here');
    const router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), { workers: 2, stdoutFd: fd(), env: { ...env, ACCESS_LOG_JOURNAL_SOCKET: missing } });
    try {
      await requests(router.url, 'missing-', 20);
      await waitFor('every record on stdout', () => ids(journal.linesOf(UNIT), 'missing-').length === 20);
      const said = router.stderr().split('\n').filter((l) => l.includes('cannot open a stream to the journal'));
      expect(said).toHaveLength(2);
      expect(said[0]).toContain(`access log: cannot open a stream to the journal at ${missing} (`);
      expect(said[0]).toContain('writing to stdout on the thread pool instead');
    } finally {
      expect(await router.kill()).toBe(0);
    }
  });

  it('a bad ACCESS_LOG_JOURNAL_SOCKET stops the router at start (exit 2), naming the setting', async () => {
    const router = startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), { workers: 2, env: { ...env, ACCESS_LOG_JOURNAL_SOCKET: 'relative/stdout' } });
    await expect(router).rejects.toThrow(/router exited 2: .*ACCESS_LOG_JOURNAL_SOCKET: expected off, or the absolute path of the journal's stdout socket \(at most 107 bytes\); got "relative\/stdout"/s);
  });
});
