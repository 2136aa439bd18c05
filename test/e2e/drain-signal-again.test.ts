import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accessLogRecords, postJson, resourcesFor, startLoggedRouter, startMock, waitFor, type LoggedRouter, type MockBackend } from '../helpers/processes.js';

/**
 * SIGTERM or SIGINT again while a drain is under way: the drain goes on as it was (no early exit,
 * the stream in flight still served until ROUTER_DRAIN_TIMEOUT), and each such signal is one
 * `warn` line of the operational log saying so, with how long is left and that SIGKILL stops at once.
 */
const DRAIN_TIMEOUT_MS = 10_000;

describe('a stop signal while the drain is under way', () => {
  let slow: MockBackend;
  let router: LoggedRouter | undefined;
  beforeAll(async () => {
    // 2,000 tokens at 20 a second: far longer than the drain timeout.
    slow = await startMock('pod-slow', ['--tokens-per-second', '20', '--output-tokens', '2000']);
  });
  afterAll(async () => {
    await router?.kill('SIGKILL');
    await slow?.kill();
  });

  /** Every stderr line of the router is a JSON line of the operational log. */
  const opsLines = (): Record<string, unknown>[] => router!.stderr().split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l));

  it('is logged once per signal, changes nothing: the stream goes on, the router exits 0 at the drain timeout', async () => {
    router = await startLoggedRouter(resourcesFor([{ name: 'pod-slow', port: slow.port }]), {
      env: { ROUTER_LOG_FORMAT: 'json', ROUTER_DRAIN_TIMEOUT: `${DRAIN_TIMEOUT_MS}ms` },
    });
    const r = router;
    const res = await postJson(`${r.url}/v1/completions`, { model: 'sf-model', prompt: 'x', stream: true }, { 'x-request-id': 'outlives-signals' });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    await reader.read();
    r.child.kill('SIGTERM');
    await waitFor('the drain\'s start in the ops log', () => opsLines().find((l) => l.event === 'drain' && l.level === 'info'));
    const again = (signal: string) => opsLines().filter((l) => l.event === 'drain' && l.level === 'warn' && l.signal === signal);
    r.child.kill('SIGTERM');
    const term = await waitFor('the second SIGTERM in the ops log', () => again('SIGTERM')[0]);
    r.child.kill('SIGINT');
    const int = await waitFor('the SIGINT in the ops log', () => again('SIGINT')[0]);
    for (const [line, signal] of [[term, 'SIGTERM'], [int, 'SIGINT']] as const) {
      expect(line).toMatchObject({ process: 'primary', signal, delayMs: 0, timeoutMs: DRAIN_TIMEOUT_MS });
      expect(line.leftMs).toBe(Math.max(0, DRAIN_TIMEOUT_MS - (line.elapsedMs as number)));
      expect(line.message).toMatch(new RegExp(`^${signal} received while a drain is already under way \\(begun \\d+ ms ago\\): the drain goes on; `
        + `requests still in flight get at most \\d+ ms more \\(ROUTER_DRAIN_DELAY 0 ms \\+ ROUTER_DRAIN_TIMEOUT ${DRAIN_TIMEOUT_MS} ms from its start\\), then are cut; `
        + 'SIGKILL stops the router at once'));
    }
    // Nothing else changed: the router still runs and the stream still comes.
    expect(r.child.exitCode).toBeNull();
    const more = await reader.read();
    expect(more.done).toBe(false);
    expect(r.child.exitCode).toBeNull();
    const read = (async () => {
      try {
        for (;;) if ((await reader.read()).done) return 'ended';
      } catch {
        return 'cut';
      }
    })();
    expect(await r.exited).toBe(0);
    expect(await read).toBe('cut');
    // One line per signal, and the exit after the drain timeout's cut.
    expect(opsLines().filter((l) => l.event === 'drain' && l.level === 'warn')).toHaveLength(2);
    expect(accessLogRecords(r.logFile).find((x) => x.request_id === 'outlives-signals').error.message).toContain('ROUTER_DRAIN_TIMEOUT');
    router = undefined;
  }, 60_000);
});
