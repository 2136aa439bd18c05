import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JOURNAL_IDENTIFIER } from '../../src/observe/access-log-journal.js';
import { journaldUnavailable, startJournald, type JournalEntry, type Journald } from '../helpers/journald.js';
import { serviceStdout } from '../helpers/mock-journal.js';
import { childPids, postJson, resourcesFor, startMock, startRouter, waitFor, type MockBackend, type Router } from '../helpers/processes.js';

/** The identifier systemd's own stream of the service (its stdout) carries here. */
const UNIT = 'router-unit';

const unavailable = journaldUnavailable();
if (unavailable !== null) console.warn(`access-log-journal: skipped: ${unavailable}`);

/**
 * The built router under systemd, as far as it can be without systemd as the service manager: a
 * real systemd-journald (a journal namespace of the test's own, test/helpers/journald.ts), the
 * router's stdout a stream to it connected and headed as systemd connects a service's
 * (StandardOutput=journal), and JOURNAL_STREAM and LOG_NAMESPACE set as systemd sets them for a
 * unit with LogNamespace=. What the journal kept is read back with journalctl.
 */
describe.skipIf(unavailable !== null)('the access log when stdout is the systemd journal (a real journald, 2 workers)', () => {
  let mock: MockBackend;
  let journald: Journald;
  let stdout: Socket;
  let env: Record<string, string>;

  /** A stream to the journal with the service's header, as systemd hands a service its stdout; its descriptor. */
  async function serviceStdoutFd(): Promise<number> {
    stdout?.destroy();
    const made = await serviceStdout(journald.stdoutPath, UNIT);
    stdout = made.socket;
    env = {
      ACCESS_LOG_ENABLED: 'true', ACCESS_LOG_FORMAT: 'json', ACCESS_LOG_OUTPUT: 'stdout',
      JOURNAL_STREAM: made.journalStream, LOG_NAMESPACE: journald.namespace,
    };
    return made.fd;
  }

  beforeAll(async () => {
    mock = await startMock('pod-a');
    journald = await startJournald();
  });
  afterAll(async () => {
    stdout?.destroy();
    await journald?.stop();
    await mock?.kill();
  });

  const ids = (entries: JournalEntry[], prefix: string): string[] => entries
    .map((e) => (JSON.parse(e.MESSAGE!) as { request_id: string }).request_id).filter((id) => id.startsWith(prefix)).sort();
  const named = (prefix: string, from: number, n: number): string[] => Array.from({ length: n }, (_, i) => `${prefix}${String(from + i).padStart(2, '0')}`);

  async function requests(router: Router, prefix: string, from: number, n: number): Promise<void> {
    const statuses = await Promise.all(named(prefix, from, n).map(async (id) => {
      const r = await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'x' }, { 'x-request-id': id });
      await r.text();
      return r.status;
    }));
    expect(statuses.every((s) => s === 200)).toBe(true);
  }

  const start = async (extra: Record<string, string> = {}): Promise<Router> => {
    const fd = await serviceStdoutFd();
    return startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), { workers: 2, stdoutFd: fd, env: { ...env, ...extra } });
  };

  it('each worker streams its records to the unit\'s journal namespace over a stream of its own: the access records\' identifier, info, the worker\'s pid; none on the inherited stdout', async () => {
    const router = await start();
    try {
      const workers = childPids(router.pid);
      await requests(router, 'own-', 0, 30);
      await waitFor('every record in the journal', () => ids(journald.entriesOf(JOURNAL_IDENTIFIER), 'own-').length === 30);
      const records = journald.entriesOf(JOURNAL_IDENTIFIER).filter((e) => e.MESSAGE!.includes('"own-'));
      expect(ids(records, 'own-')).toEqual(named('own-', 0, 30));
      expect(new Set(records.map((e) => [e.PRIORITY, e._TRANSPORT, e._NAMESPACE].join(' ')))).toEqual(new Set([`6 stdout ${journald.namespace}`]));
      for (const e of records) expect(workers).toContain(Number(e._PID));
      // One stream per worker that logged.
      expect(new Set(records.map((e) => e._STREAM_ID)).size).toBe(new Set(records.map((e) => e._PID)).size);
      expect(ids(journald.entriesOf(UNIT), 'own-')).toEqual([]);
    } finally {
      expect(await router.kill()).toBe(0);
    }
    expect(router.stderr()).not.toMatch(/access log:/);
  });

  it('journald restarted under the router: the next write finds the stream gone; the worker opens another, says so, and no record is lost', async () => {
    const router = await start();
    try {
      await requests(router, 'restart-', 0, 10);
      await waitFor('the first records', () => ids(journald.entriesOf(JOURNAL_IDENTIFIER), 'restart-').length === 10);
      const before = new Set(journald.entriesOf(JOURNAL_IDENTIFIER).map((e) => e._STREAM_ID));
      // Streams a second old and more: a restart, not a journald refusing streams.
      await new Promise((resolve) => setTimeout(resolve, 1100));
      await journald.restart();
      await requests(router, 'restart-', 10, 20);
      await waitFor('the later records', () => ids(journald.entriesOf(JOURNAL_IDENTIFIER), 'restart-').length === 30);
      expect(ids(journald.entriesOf(JOURNAL_IDENTIFIER), 'restart-')).toEqual(named('restart-', 0, 30));
      // The later ones came over new streams.
      const later = journald.entriesOf(JOURNAL_IDENTIFIER).filter((e) => ids([e], 'restart-').some((id) => id >= 'restart-10'));
      for (const e of later) expect(before.has(e._STREAM_ID!)).toBe(false);
      // Each worker that wrote since found its stream closed and opened another, and said both (stderr is written apart).
      const said = (what: string): number => router.stderr().split('\n').filter((l) => l.includes(what)).length;
      await waitFor('each closed stream said closed and opened again', () => said('is open again') > 0 && said('is open again') === said('; opening another'));
      expect(router.stderr()).toMatch(new RegExp(`access log: the stream to the journal at ${journald.stdoutPath} was closed \\(.+\\); opening another`));
      expect(router.stderr()).not.toMatch(/cannot open a stream|dropped/);
    } finally {
      expect(await router.kill()).toBe(0);
    }
  });

  it('ACCESS_LOG_JOURNAL_SOCKET=off: the records go to the inherited stdout, the unit\'s stream', async () => {
    const router = await start({ ACCESS_LOG_JOURNAL_SOCKET: 'off' });
    try {
      await requests(router, 'off-', 0, 20);
      await waitFor('every record under the unit\'s identifier', () => ids(journald.entriesOf(UNIT), 'off-').length === 20);
      expect(ids(journald.entriesOf(JOURNAL_IDENTIFIER), 'off-')).toEqual([]);
    } finally {
      expect(await router.kill()).toBe(0);
    }
  });

  it('no journal at the namespace\'s socket: each worker says so once and writes to the inherited stdout', async () => {
    const router = await start({ LOG_NAMESPACE: `${journald.namespace}-none` });
    try {
      await requests(router, 'missing-', 0, 20);
      await waitFor('every record under the unit\'s identifier', () => ids(journald.entriesOf(UNIT), 'missing-').length === 20);
      const said = router.stderr().split('\n').filter((l) => l.includes('cannot open a stream to the journal'));
      expect(said).toHaveLength(2);
      expect(said[0]).toContain(`access log: cannot open a stream to the journal at /run/systemd/journal.${journald.namespace}-none/stdout (`);
      expect(said[0]).toContain('writing to stdout on the thread pool instead');
    } finally {
      expect(await router.kill()).toBe(0);
    }
  });

  it('a bad ACCESS_LOG_JOURNAL_SOCKET stops the router at start (exit 2), naming the setting', async () => {
    await expect(start({ ACCESS_LOG_JOURNAL_SOCKET: 'relative/stdout' }))
      .rejects.toThrow(/router exited 2: .*ACCESS_LOG_JOURNAL_SOCKET: expected off, or the absolute path of the journal's stdout socket \(at most 107 bytes\); got \\?"relative\/stdout\\?"/s);
  });
});
