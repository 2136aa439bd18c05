import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { journaldUnavailable, startJournald, type JournalEntry, type Journald } from '../helpers/journald.js';
import { serviceStdout } from '../helpers/mock-journal.js';
import { serverPort } from '../helpers/ports.js';
import { childPids, CLI, killOneWorker, listenLocal, postJson, processAlive, resourcesFor, startMock, startProcess, tempDir, waitFor, writeFile, type MockBackend, type Proc } from '../helpers/processes.js';

/** The identifier of the unit's own stream (its stdout and stderr), as systemd heads it. */
const UNIT = 'router-unit';

/** syslog priorities of the operational log's levels. */
const PRIORITY: Record<string, string> = { info: '6', warn: '4', error: '3' };

const unavailable = journaldUnavailable();
if (unavailable !== null) console.warn(`ops-log-journal: skipped: ${unavailable}`);

/**
 * The built router's operational log under systemd, as far as it can be without systemd as the
 * service manager: a real systemd-journald (test/helpers/journald.ts), the router's stdout and
 * stderr one stream to it, headed as systemd heads a service's by default (priority info, level
 * prefixes read: SyslogLevelPrefix=yes), JOURNAL_STREAM set to it. What the journal kept is read
 * back with journalctl.
 */
describe.skipIf(unavailable !== null)('the operational log when stderr is the systemd journal (a real journald)', () => {
  let mock: MockBackend;
  let journald: Journald;
  const streams: Socket[] = [];

  beforeAll(async () => {
    mock = await startMock('pod-a');
    journald = await startJournald();
  });
  afterAll(async () => {
    for (const s of streams) s.destroy();
    await journald?.stop();
    await mock?.kill();
  });

  /** The router's CLI with `args`, stdout and stderr the one stream to the journal as under systemd (StandardOutput=journal). */
  async function startUnderJournal(args: string[], env: Record<string, string> = {}): Promise<Proc> {
    const made = await serviceStdout(journald.stdoutPath, UNIT, { levelPrefix: true });
    streams.push(made.socket);
    return startProcess([CLI, ...args], { ROUTER_DRAIN_DELAY: '0', ...env, JOURNAL_STREAM: made.journalStream }, { name: 'router', stdoutFd: made.fd, stderrFd: made.fd });
  }

  /** The command line of a router on `port` with `workers`, serving the mock pod (its resources file written for it). */
  function routerArgs(port: number, workers: number): string[] {
    const file = `${tempDir()}/resources.yaml`;
    writeFile(file, resourcesFor([{ name: 'pod-a', port: mock.port }]));
    return ['--resources', file, '--port', String(port), '--host', '127.0.0.1', '--workers', String(workers)];
  }

  /** Until the router on `port` answers /readyz 200. */
  const ready = (port: number, what: string, timeoutMs?: number): Promise<boolean> =>
    waitFor(what, async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200, timeoutMs);

  /** The unit's entries from the process `pid` and its workers that are operational log lines (JSON), with their parsed message. */
  const opsLines = (pids: (pid: number) => boolean): { entry: JournalEntry; line: Record<string, unknown> }[] => journald.entriesOf(UNIT)
    .filter((e) => pids(Number(e._PID)) && e.MESSAGE!.startsWith('{"time"'))
    .map((e) => ({ entry: e, line: JSON.parse(e.MESSAGE!) as Record<string, unknown> }));

  it('each line comes with its level as its priority (info 6, warn 4), taken off the line: the start, the workers, a worker killed, the drain', async () => {
    const port = await serverPort();
    const router = await startUnderJournal(routerArgs(port, 2), { ROUTER_LOG_FORMAT: 'json' });
    const pids = new Set([router.pid]);
    let killed = 0;
    try {
      await ready(port, 'the router to listen', 60_000);
      for (const pid of childPids(router.pid)) pids.add(pid);
      killed = await killOneWorker(router);
      for (const pid of childPids(router.pid)) pids.add(pid);
      await ready(port, 'the replacement to listen');
      const r = await postJson(`http://127.0.0.1:${port}/v1/completions`, { model: 'sf-model', prompt: 'x' });
      expect(r.status).toBe(200);
      await r.text();
    } finally {
      expect(await router.kill()).toBe(0);
    }
    await waitFor('the drain in the journal', () => opsLines((pid) => pid === router.pid).some((x) => x.line.event === 'drain'));
    const lines = opsLines((pid) => pids.has(pid));
    expect(lines.filter((x) => x.line.level === 'info').length).toBeGreaterThan(2);
    const exited = lines.find((x) => x.line.event === 'worker' && String(x.line.message).startsWith(`worker ${killed} exited (SIGKILL)`));
    expect(exited?.line.level).toBe('warn');
    expect(exited?.entry.PRIORITY).toBe('4');
    expect(lines.find((x) => x.line.event === 'drain')?.entry.PRIORITY).toBe('6');
    // Every line of every process at its level's priority, no `<N>` left on a message.
    for (const { entry, line } of lines) expect([line.level, entry.PRIORITY]).toEqual([line.level, PRIORITY[line.level as string]]);
    expect(journald.entriesOf(UNIT).filter((e) => /^<\d>/.test(e.MESSAGE!))).toEqual([]);
  });

  it('a worker\'s lines too: the primary killed, each worker\'s warning that it is gone at 4', async () => {
    const port = await serverPort();
    const router = await startUnderJournal(routerArgs(port, 2), { ROUTER_LOG_FORMAT: 'json' });
    await ready(port, 'the router to listen', 60_000);
    const workers = childPids(router.pid);
    expect(workers).toHaveLength(2);
    await router.kill('SIGKILL');
    await waitFor('the workers to exit', () => workers.every((pid) => !processAlive(pid)));
    const gone = await waitFor('each worker\'s warning', () => {
      const said = opsLines((pid) => workers.includes(pid)).filter((x) => x.line.event === 'worker' && String(x.line.message).startsWith('the primary is gone'));
      return said.length === 2 ? said : null;
    });
    expect(gone.map((x) => [x.line.process, x.line.level, x.entry.PRIORITY])).toEqual([['worker', 'warn', '4'], ['worker', 'warn', '4']]);
  });

  it('an error stopping the start is an error (3): the port taken, in JSON and in text', async () => {
    const taken: Server = createServer();
    const port = await listenLocal(taken);
    try {
      for (const format of ['json', 'text']) {
        const router = await startUnderJournal(routerArgs(port, 1), { ROUTER_LOG_FORMAT: format });
        expect(await router.exited).toBe(2);
        const exit = await waitFor(`the ${format} exit line`, () => journald.entriesOf(UNIT).find((e) => Number(e._PID) === router.pid && /exit 2/.test(e.MESSAGE!)));
        expect(exit.PRIORITY).toBe('3');
        expect(exit.MESSAGE!.startsWith(format === 'json' ? '{"time"' : '20')).toBe(true);
      }
    } finally {
      taken.close();
    }
  });

  it('a command line refused before the settings are read: each line of the message an error (3)', async () => {
    const router = await startUnderJournal(['--bogus-flag']);
    expect(await router.exited).toBe(2);
    const said = await waitFor('the refusal in the journal', () => {
      const mine = journald.entriesOf(UNIT).filter((e) => Number(e._PID) === router.pid);
      return mine.some((e) => e.MESSAGE!.includes('--help')) ? mine : null;
    });
    expect(said[0].MESSAGE).toMatch(/^inference-router: .*--bogus-flag/);
    expect(said.map((e) => e.PRIORITY)).toEqual(said.map(() => '3'));
    expect(said.length).toBeGreaterThan(1);
  });
});
