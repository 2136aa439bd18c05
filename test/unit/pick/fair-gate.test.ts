import { describe, expect, it } from 'vitest';
import { FairGate, FairGates, type FairWaiter } from '../../../src/pick/fair-gate.js';
import { TenantUsage } from '../../../src/pick/tenant-usage.js';
import { parseFairnessSettings } from '../../../src/pick/fairness-settings.js';
import { ManualTimers } from '../../helpers/manual-timers.js';

/** A waiting request that records what it was told, in the order of every waiter's news. */
class Waiter implements FairWaiter {
  constructor(readonly name: string, private readonly log: string[]) {}
  granted(): void { this.log.push(`go ${this.name}`); }
  timedOut(): void { this.log.push(`timeout ${this.name}`); }
  stopped(): void { this.log.push(`stopped ${this.name}`); }
}

function gate(timers: ManualTimers, limit: number, opts: { maxWaiting?: number; timeoutMs?: number; windowMs?: number; waits?: number[]; requestWeight?: number } = {}): FairGate {
  return new FairGate('ns/server', limit, opts.maxWaiting ?? 100, opts.timeoutMs ?? 60_000, { input: 1, output: 2, request: opts.requestWeight ?? 0 }, opts.windowMs ?? 300_000,
    () => timers.now, timers, opts.waits === undefined ? null : (_s, ms) => opts.waits!.push(ms));
}

describe('fair gate', () => {
  it('lets requests go up to its limit, then queues them; a release lets the next go', () => {
    const t = new ManualTimers();
    const log: string[] = [];
    const g = gate(t, 2);
    expect(g.enter(new Waiter('a1', log), 'a', 10)).toBe('go');
    expect(g.enter(new Waiter('a2', log), 'a', 10)).toBe('go');
    expect(g.enter(new Waiter('a3', log), 'a', 10)).toBe('wait');
    expect([g.active, g.queued]).toEqual([2, 1]);
    g.release('a', 5);
    expect(log).toEqual(['go a3']);
    expect([g.active, g.queued]).toEqual([2, 0]);
  });

  it('a tenant that used the server less goes before a heavier one\'s earlier requests; each tenant\'s own in order', () => {
    const t = new ManualTimers();
    const log: string[] = [];
    const g = gate(t, 1);
    expect(g.enter(new Waiter('heavy0', log), 'heavy', 1000)).toBe('go');
    for (let i = 1; i <= 3; i++) expect(g.enter(new Waiter(`heavy${i}`, log), 'heavy', 1000)).toBe('wait');
    t.now += 10;
    expect(g.enter(new Waiter('light1', log), 'light', 10)).toBe('wait');
    expect(g.enter(new Waiter('light2', log), 'light', 10)).toBe('wait');
    // heavy has 1000 input in; light nothing: light goes first, then light again (10 < 1000 + 2 × 500).
    g.release('heavy', 500);
    expect(log).toEqual(['go light1']);
    g.release('light', 5);
    expect(log).toEqual(['go light1', 'go light2']);
    g.release('light', 5);
    g.release('heavy', 100);
    g.release('heavy', 100);
    expect(log).toEqual(['go light1', 'go light2', 'go heavy1', 'go heavy2', 'go heavy3']);
  });

  it('with a request weight, many small requests count against their tenant too', () => {
    for (const [requestWeight, expected] of [[0, 'go many4'], [100, 'go big1']] as const) {
      const t = new ManualTimers();
      const log: string[] = [];
      const g = gate(t, 1, { requestWeight });
      g.enter(new Waiter('many0', log), 'many', 1);
      for (let i = 1; i < 4; i++) { g.enter(new Waiter(`many${i}`, log), 'many', 1); g.release('many', 0); }
      log.length = 0;
      g.enter(new Waiter('big0', log), 'big', 50);
      g.release('many', 0); // big0 goes (the only one waiting)
      g.enter(new Waiter('many4', log), 'many', 1);
      g.enter(new Waiter('big1', log), 'big', 50);
      log.length = 0;
      g.release('big', 0);
      // Tokens alone: many 4 + big 50; each request weighing 100: many 404 + big 150.
      expect(log).toEqual([expected]);
    }
  });

  it('at equal use, the request that waited longest goes first', () => {
    const t = new ManualTimers();
    const log: string[] = [];
    const g = gate(t, 1);
    g.enter(new Waiter('x', log), 'x', 0);
    g.enter(new Waiter('b', log), 'b', 0);
    t.now += 1;
    g.enter(new Waiter('a', log), 'a', 0);
    g.release('x', 0);
    g.release('b', 0);
    expect(log).toEqual(['go b', 'go a']);
  });

  it('use older than the window no longer counts', () => {
    const t = new ManualTimers();
    const log: string[] = [];
    const g = gate(t, 1, { windowMs: 60_000, timeoutMs: 3_600_000 });
    g.enter(new Waiter('old', log), 'old', 5000);
    g.release('old', 0);
    t.now += 10_000;
    g.enter(new Waiter('busy', log), 'busy', 100);
    g.enter(new Waiter('old2', log), 'old', 0);
    t.now += 1;
    g.enter(new Waiter('new', log), 'new', 0);
    // Within the window 'old' weighs 5000: 'new' goes first.
    g.release('busy', 0);
    expect(log).toEqual(['go new']);
    t.now += 70_000;
    g.enter(new Waiter('new2', log), 'new', 0);
    // Past the window 'old' weighs 0 again and waited longest.
    g.release('new', 0);
    expect(log).toEqual(['go new', 'go old2']);
  });

  it('a request that waits too long times out and leaves the queue; its wait is reported', async () => {
    const t = new ManualTimers();
    const log: string[] = [];
    const waits: number[] = [];
    const g = gate(t, 1, { timeoutMs: 500, waits });
    g.enter(new Waiter('a', log), 'a', 0);
    g.enter(new Waiter('b', log), 'b', 0);
    await t.advance(499);
    expect(log).toEqual([]);
    await t.advance(1);
    expect(log).toEqual(['timeout b']);
    expect(waits).toEqual([500]);
    expect(g.queued).toBe(0);
    g.release('a', 0);
    expect(log).toEqual(['timeout b']);
    expect(g.active).toBe(0);
  });

  it('a full queue refuses; a client that leaves is taken out, its timer with it', async () => {
    const t = new ManualTimers();
    const log: string[] = [];
    const g = gate(t, 1, { maxWaiting: 2, timeoutMs: 100 });
    g.enter(new Waiter('a', log), 'a', 0);
    const b = new Waiter('b', log);
    expect(g.enter(b, 'b', 0)).toBe('wait');
    expect(g.enter(new Waiter('c', log), 'c', 0)).toBe('wait');
    expect(g.enter(new Waiter('d', log), 'd', 0)).toBe('full');
    g.leave(b);
    expect(g.queued).toBe(1);
    expect(t.pending()).toEqual([100]);
    g.release('a', 0);
    expect(log).toEqual(['go c']);
    await t.advance(1000);
    expect(log).toEqual(['go c']);
  });

  it('requests that fail as they go (releasing at once) let the next go without a deeper call each', () => {
    const t = new ManualTimers();
    const g = gate(t, 1, { maxWaiting: 20_000 });
    let went = 0;
    const failing: FairWaiter = { granted: () => { went++; g.release('t', 0); }, timedOut: () => undefined, stopped: () => undefined };
    expect(g.enter(new Waiter('first', []), 'first', 0)).toBe('go');
    for (let i = 0; i < 20_000; i++) g.enter(failing, 't', 0);
    g.release('first', 0);
    expect(went).toBe(20_000);
    expect([g.active, g.queued]).toEqual([0, 0]);
  });

  it('a stopping router tells every waiting request', () => {
    const t = new ManualTimers();
    const log: string[] = [];
    const gates = new FairGates(parseFairnessSettings({ ROUTER_FAIRNESS_MAX_CONCURRENT: '1' })!, 1, () => t.now, t);
    gates.of('s1').enter(new Waiter('a', log), 'a', 0);
    gates.of('s1').enter(new Waiter('b', log), 'b', 0);
    gates.of('s2').enter(new Waiter('c', log), 'c', 0);
    gates.of('s2').enter(new Waiter('d', log), 'd', 0);
    expect([...gates.queued()]).toEqual([['s1', 1], ['s2', 1]]);
    gates.cutWaiting();
    expect(log).toEqual(['stopped b', 'stopped d']);
    expect(t.pending()).toEqual([]);
  });

  it('the gate of a server gone from the configuration is dropped once idle', () => {
    const t = new ManualTimers();
    const gates = new FairGates(parseFairnessSettings({ ROUTER_FAIRNESS_MAX_CONCURRENT: '1' })!, 1, () => t.now, t);
    const busy = gates.of('busy');
    busy.enter(new Waiter('a', []), 'a', 0);
    gates.of('idle');
    gates.of('kept');
    gates.forgetIdle((s) => s === 'kept');
    expect([...gates.queued().keys()]).toEqual(['busy', 'kept']);
    busy.release('a', 0);
    gates.forgetIdle((s) => s === 'kept');
    expect([...gates.queued().keys()]).toEqual(['kept']);
    // A server that comes back gets a new gate.
    expect(gates.of('busy')).not.toBe(busy);
  });

  it('each worker has its share of the places and of the queue, at least one', () => {
    const t = new ManualTimers();
    const log: string[] = [];
    const settings = parseFairnessSettings({ ROUTER_FAIRNESS_MAX_CONCURRENT: '5', ROUTER_FAIRNESS_MAX_QUEUED: '3' })!;
    const g = new FairGates(settings, 2, () => t.now, t).of('s');
    const outcomes = Array.from({ length: 6 }, (_, i) => g.enter(new Waiter(`r${i}`, log), 't', 0));
    expect(outcomes).toEqual(['go', 'go', 'go', 'wait', 'wait', 'full']);
    const one = new FairGates(parseFairnessSettings({ ROUTER_FAIRNESS_MAX_CONCURRENT: '1', ROUTER_FAIRNESS_MAX_QUEUED: '1' })!, 4, () => t.now, t).of('s');
    expect([one.enter(new Waiter('x', log), 't', 0), one.enter(new Waiter('y', log), 't', 0), one.enter(new Waiter('z', log), 't', 0)]).toEqual(['go', 'wait', 'full']);
  });
});

describe('tenant usage', () => {
  it('sums a tenant\'s weighted tokens over the window, in slices', () => {
    let now = 1_000_000;
    const u = new TenantUsage(120_000, () => now);
    u.add('a', 100);
    now += 60_000;
    u.add('a', 50);
    expect(u.used('a')).toBe(150);
    expect(u.used('b')).toBe(0);
    now += 65_000; // the first slice is past the window
    expect(u.used('a')).toBe(50);
    now += 60_000;
    expect(u.used('a')).toBe(0);
  });

  it('stays bounded: tenants with nothing left in the window are dropped when many are kept', () => {
    let now = 0;
    const u = new TenantUsage(1000, () => now);
    for (let i = 0; i < 10_000; i++) u.add(`t${i}`, 1);
    expect(u.size).toBe(10_000);
    now += 5000;
    u.add('late', 1);
    expect(u.size).toBe(1);
  });
});

describe('fairness settings', () => {
  it('off unless ROUTER_FAIRNESS_MAX_CONCURRENT is above 0; defaults; bad values named', () => {
    expect(parseFairnessSettings({})).toBeNull();
    expect(parseFairnessSettings({ ROUTER_FAIRNESS_MAX_CONCURRENT: '0' })).toBeNull();
    expect(parseFairnessSettings({ ROUTER_FAIRNESS_MAX_CONCURRENT: '16' })).toEqual({
      maxConcurrent: 16, maxQueued: 1000, queueTimeoutMs: 60_000, windowMs: 300_000, inputTokenWeight: 1, outputTokenWeight: 2, requestWeight: 0,
    });
    expect(parseFairnessSettings({ ROUTER_FAIRNESS_MAX_CONCURRENT: '1', ROUTER_FAIRNESS_REQUEST_WEIGHT: '50' })!.requestWeight).toBe(50);
    expect(() => parseFairnessSettings({ ROUTER_FAIRNESS_REQUEST_WEIGHT: '2000' })).toThrow(/ROUTER_FAIRNESS_REQUEST_WEIGHT/);
    expect(parseFairnessSettings({ ROUTER_FAIRNESS_MAX_CONCURRENT: '4', ROUTER_FAIRNESS_QUEUE_TIMEOUT: '2s', ROUTER_FAIRNESS_WINDOW: '1h', ROUTER_FAIRNESS_OUTPUT_TOKEN_WEIGHT: '4.5' }))
      .toMatchObject({ queueTimeoutMs: 2000, windowMs: 3_600_000, outputTokenWeight: 4.5 });
    expect(() => parseFairnessSettings({ ROUTER_FAIRNESS_MAX_CONCURRENT: '-1' })).toThrow(/ROUTER_FAIRNESS_MAX_CONCURRENT/);
    expect(() => parseFairnessSettings({ ROUTER_FAIRNESS_MAX_QUEUED: '0' })).toThrow(/ROUTER_FAIRNESS_MAX_QUEUED/);
    expect(() => parseFairnessSettings({ ROUTER_FAIRNESS_WINDOW: '10ms' })).toThrow(/ROUTER_FAIRNESS_WINDOW/);
    expect(() => parseFairnessSettings({ ROUTER_FAIRNESS_INPUT_TOKEN_WEIGHT: 'x' })).toThrow(/ROUTER_FAIRNESS_INPUT_TOKEN_WEIGHT/);
    // A bad value is refused even with fair queueing off: a typo is not silently ignored.
    expect(() => parseFairnessSettings({ ROUTER_FAIRNESS_QUEUE_TIMEOUT: 'soon' })).toThrow(/ROUTER_FAIRNESS_QUEUE_TIMEOUT/);
  });
});
