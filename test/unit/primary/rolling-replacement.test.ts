/**
 * The rolling replacement over a fake cluster: workers are objects (id, pid, isDead, send) that
 * start, listen and exit when the test says, on timers the test advances. The harness plays the
 * primary's part: it restarts a worker that exits only when `exited` says `worker`, and not while
 * the router drains. Throughout, the number of workers (running, not told to retire) must come
 * back to the number configured.
 */
import { describe, expect, it } from 'vitest';
import type { ListenerTlsPair } from '../../../src/config/listener-tls.js';
import type { PrimaryToWorker } from '../../../src/primary/messages.js';
import { RollingReplacement, type ExitedRole } from '../../../src/primary/rolling-replacement.js';
import { TlsRotation } from '../../../src/primary/tls-rotation.js';
import { ManualTimers, turn } from '../../helpers/manual-timers.js';

/** How long a fake worker takes to listen (or to fail) once forked, and to drain once retired. */
const START_MS = 300;
const DRAIN_MS = 1_000;

function pair(name: string): ListenerTlsPair {
  return { certPem: `cert ${name}`, keyPem: `key ${name}`, subject: `CN=${name}`, notAfter: new Date('2030-01-01T00:00:00Z'), fingerprint256: `fp ${name}` };
}

class FakeWorker {
  readonly process: { readonly pid: number };
  dead = false;
  listening = false;
  applied = false;
  readonly sent: string[] = [];
  constructor(readonly id: number, readonly opened: string, private readonly onSend: (w: FakeWorker, m: PrimaryToWorker) => void) {
    this.process = { pid: 1000 + id };
  }
  isDead(): boolean {
    return this.dead;
  }
  send(m: PrimaryToWorker): boolean {
    this.sent.push(m.t);
    this.onSend(this, m);
    return true;
  }
}

/** What a forked worker does: listens START_MS after its fork, exits then with code 1, or waits for the test. */
type Start = 'listen' | 'fail' | 'wait';

function fakeCluster(n: number) {
  const timers = new ManualTimers();
  const workers = new Map<number, FakeWorker>();
  const all: FakeWorker[] = [];
  const roles: string[] = [];
  const plan: Start[] = [];
  const written: string[] = [];
  let opens = 'start';
  let nextId = 1;
  let draining = false;
  let pruned = 0;
  /** The most workers running at once that were not told to retire. */
  let most = 0;

  const exit = (w: FakeWorker, code: number): void => {
    if (w.dead) return;
    w.dead = true;
    w.listening = w.applied = false;
    workers.delete(w.id);
    const was: ExitedRole<FakeWorker> = rr.exited(w);
    roles.push(`${w.process.pid} ${was.role}${code === 0 ? '' : ` (code ${code})`}`);
    if (!draining && was.role === 'worker') rr.fork();
  };
  const listen = (w: FakeWorker): void => {
    if (w.dead) return;
    w.listening = true;
    w.applied = true;
  };
  const rr = new RollingReplacement<FakeWorker>({
    workers: () => workers.values(),
    fork: () => {
      const w = new FakeWorker(nextId++, opens, (self, m) => {
        if (m.t === 'core:retire') timers.setTimeout(() => exit(self, 0), DRAIN_MS);
      });
      workers.set(w.id, w);
      all.push(w);
      const start = plan.shift() ?? 'listen';
      if (start === 'listen') timers.setTimeout(() => listen(w), START_MS);
      if (start === 'fail') timers.setTimeout(() => exit(w, 1), START_MS);
      most = Math.max(most, serving().length);
      return w;
    },
    write: (p) => {
      written.push(p.subject);
      opens = p.subject;
    },
    prune: () => pruned++,
    listening: (w) => w.listening,
    serving: (w) => w.listening && w.applied,
    retired: (w) => {
      w.listening = false;
    },
    stopping: () => draining,
    timers,
  });
  /** The workers running that were not told to retire. */
  const serving = (): FakeWorker[] => [...workers.values()].filter((w) => !w.sent.includes('core:retire'));
  const started = async (): Promise<void> => {
    for (let i = 0; i < n; i++) rr.fork();
    await timers.advance(START_MS);
  };
  /** Advances the timers until `p` settles (at most `ms`); resolves to its outcome. */
  const settle = async <T>(p: Promise<T>, ms = 60_000): Promise<{ ok: true; value: T } | { ok: false; error: Error }> => {
    let out: { ok: true; value: T } | { ok: false; error: Error } | null = null;
    p.then((value) => { out = { ok: true, value }; }, (error: Error) => { out = { ok: false, error }; });
    for (let t = 0; out === null && t < ms; t += 20) await timers.advance(20);
    if (out === null) throw new Error(`not settled within ${ms} ms`);
    return out;
  };
  return {
    rr, timers, workers, all, roles, plan, written, serving, started, settle, exit, listen,
    pid: (i: number) => all[i]!.process.pid,
    drain: () => { draining = true; },
    pruned: () => pruned,
    most: () => most,
  };
}

describe('RollingReplacement', () => {
  it('replaces each worker one at a time, retiring the old one once its replacement serves', async () => {
    const c = fakeCluster(3);
    await c.started();
    const old = c.serving();
    const out = await c.settle(c.rr.roll(pair('b')));
    expect(out.ok).toBe(true);
    expect(c.written).toEqual(['CN=b']);
    expect(c.serving().map((w) => w.opened)).toEqual(['CN=b', 'CN=b', 'CN=b']);
    for (const w of old) {
      expect(w.sent).toEqual(['core:retire']);
      expect(w.dead).toBe(true);
    }
    expect(c.roles).toEqual([`${c.pid(0)} retired`, `${c.pid(1)} retired`, `${c.pid(2)} retired`]);
    expect(c.most()).toBe(4); // one more than configured, while a replacement starts
    expect(c.pruned()).toBe(1);
  });

  it('a replacement that dies before listening: none is forked for it, the old one keeps serving, and the rotation stops', async () => {
    const c = fakeCluster(3);
    await c.started();
    c.plan.push('listen', 'fail');
    const out = await c.settle(c.rr.roll(pair('b')));
    expect(out.ok).toBe(false);
    // Worker 5 (the second replacement) was to replace worker 2 (the second of the three).
    expect(out.ok ? '' : out.error.message).toBe(`worker ${c.pid(4)}, started to replace worker ${c.pid(1)}, exited before listening`);
    await c.timers.advance(DRAIN_MS * 5);
    expect(c.roles).toEqual([`${c.pid(4)} spare (code 1)`, `${c.pid(0)} retired`]);
    expect(c.serving()).toHaveLength(3);
    expect(c.serving().map((w) => w.opened)).toEqual(['start', 'start', 'CN=b']);
    expect(c.all).toHaveLength(5); // no restart forked

    // Tried again (the same pair): only the workers that do not serve it yet are replaced.
    const again = await c.settle(c.rr.roll(pair('b')));
    expect(again.ok).toBe(true);
    expect(c.written).toEqual(['CN=b']); // the same copy
    expect(c.all).toHaveLength(7);
    expect(c.serving()).toHaveLength(3);
    expect(c.serving().map((w) => w.opened)).toEqual(['CN=b', 'CN=b', 'CN=b']);
    expect(c.most()).toBe(4);
  });

  it('the old worker dies while its replacement starts: none is forked for it, the replacement takes its place', async () => {
    const c = fakeCluster(2);
    await c.started();
    c.plan.push('wait');
    const p = c.rr.roll(pair('b'));
    await c.timers.advance(100);
    const replacement = c.all[2]!;
    c.exit(c.all[0]!, 137);
    expect(c.roles).toEqual([`${c.pid(0)} replaced (code 137)`]);
    expect(c.all).toHaveLength(3);
    c.listen(replacement);
    const out = await c.settle(p);
    expect(out.ok).toBe(true);
    expect(c.serving().map((w) => w.opened)).toEqual(['CN=b', 'CN=b']);
    expect(c.all).toHaveLength(4); // the replacement, then the second worker's
    expect(c.roles).toEqual([`${c.pid(0)} replaced (code 137)`, `${c.pid(1)} retired`]);
  });

  it('the old worker dies while its replacement starts, then the replacement dies: that one is restarted, the count kept', async () => {
    const c = fakeCluster(2);
    await c.started();
    c.plan.push('wait', 'wait');
    const p = c.rr.roll(pair('b'));
    await c.timers.advance(100);
    c.exit(c.all[0]!, 137);
    c.exit(c.all[2]!, 1);
    expect(c.roles).toEqual([`${c.pid(0)} replaced (code 137)`, `${c.pid(2)} worker (code 1)`]);
    expect(c.all).toHaveLength(4); // the restart
    c.listen(c.all[3]!);
    const out = await c.settle(p);
    expect(out.ok).toBe(false);
    expect(c.serving()).toHaveLength(2);
    // The restart opened the new pair: tried again, only the other worker is replaced.
    const again = await c.settle(c.rr.roll(pair('b')));
    expect(again.ok).toBe(true);
    expect(c.all).toHaveLength(5);
    expect(c.serving().map((w) => w.opened)).toEqual(['CN=b', 'CN=b']);
  });

  it('a replacement that dies after listening, while the worker it replaces still starts: that one is kept, none forked', async () => {
    const c = fakeCluster(2);
    c.plan.push('wait'); // the first worker is still starting (a crash's restart, say)
    await c.started();
    const p = c.rr.roll(pair('b'));
    await c.timers.advance(START_MS + 100);
    const replacement = c.all[2]!;
    expect(replacement.listening).toBe(true);
    c.exit(replacement, 1);
    const out = await c.settle(p);
    expect(out.ok ? '' : out.error.message).toBe(`worker ${c.pid(2)}, started to replace worker ${c.pid(0)}, exited before worker ${c.pid(0)} was retired`);
    expect(c.roles).toEqual([`${c.pid(2)} spare (code 1)`]);
    expect(c.all).toHaveLength(3);
    c.listen(c.all[0]!);
    expect(c.serving()).toHaveLength(2);
  });

  it('a worker still starting is retired only once it listens', async () => {
    const c = fakeCluster(1);
    c.plan.push('wait');
    await c.started();
    const p = c.rr.roll(pair('b'));
    await c.timers.advance(START_MS * 3);
    expect(c.all[0]!.sent).toEqual([]);
    c.listen(c.all[0]!);
    const out = await c.settle(p);
    expect(out.ok).toBe(true);
    expect(c.all[0]!.sent).toEqual(['core:retire']);
    expect(c.serving().map((w) => w.opened)).toEqual(['CN=b']);
  });

  it('the drain during a rotation stops it: nothing more is forked or retired, and no exit is restarted', async () => {
    const c = fakeCluster(2);
    await c.started();
    c.plan.push('wait');
    const p = c.rr.roll(pair('b'));
    await c.timers.advance(100);
    c.drain();
    const out = await c.settle(p);
    expect(out.ok ? '' : out.error.message).toBe('the router is stopping');
    expect(c.all).toHaveLength(3);
    expect(c.all.map((w) => w.sent)).toEqual([[], [], []]);
    for (const w of [...c.all]) c.exit(w, 0);
    expect(c.roles).toEqual([`${c.pid(0)} replaced`, `${c.pid(1)} worker`, `${c.pid(2)} worker`]);
    expect(c.all).toHaveLength(3);
  });
});

describe('certificate rotation over the rolling replacement', () => {
  it('a replacement that dies before listening: the workers stay as many, and the rotation tried again 5 s later completes', async () => {
    const c = fakeCluster(2);
    await c.started();
    const lines: string[] = [];
    let disk = 'a';
    const rotation = new TlsRotation({
      files: { certFile: '/secret/tls.crt', keyFile: '/secret/tls.key' },
      served: pair('a'),
      readTexts: () => disk,
      check: () => pair(disk),
      rotate: (p) => c.rr.roll(p),
      info: (m) => lines.push(`info ${m}`),
      warn: (m) => lines.push(`warn ${m}`),
      timers: c.timers,
    });
    c.plan.push('fail');
    disk = 'b';
    void rotation.changed();
    await c.timers.advance(START_MS);
    await turn();
    expect(lines.at(-1)).toBe(`warn certificate rotation stopped: worker ${c.pid(2)}, started to replace worker ${c.pid(0)}, exited before listening; tried again in 5 s (or at once when the files change)`);
    expect(c.roles).toEqual([`${c.pid(2)} spare (code 1)`]);
    expect(c.serving().map((w) => w.opened)).toEqual(['start', 'start']);
    await c.timers.advance(5_000 - START_MS - 20);
    expect(c.all).toHaveLength(3);
    for (let t = 0; t < 20_000 && !rotation.served.subject.endsWith('b'); t += 20) await c.timers.advance(20);
    expect(lines.at(-1)).toBe('info certificate rotation done: every worker serves CN=b, valid until 2030-01-01T00:00:00.000Z');
    expect(c.serving().map((w) => w.opened)).toEqual(['CN=b', 'CN=b']);
    expect(c.all).toHaveLength(5);
    expect(c.most()).toBe(3);
    expect(c.timers.pending()).toEqual([]);
  });
});
