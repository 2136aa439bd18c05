import { describe, expect, it } from 'vitest';
import { PrefixHub } from '../../../src/pick/prefix-hub.js';
import { PrefixShare } from '../../../src/pick/prefix-share.js';
import { PrefixStore } from '../../../src/pick/prefix-store.js';
import { EndpointState } from '../../../src/upstream/endpoint-registry.js';

describe('shared prefix affinity', () => {
  it('a worker reports only new pairs, once; another worker learns them through the hub; the hub is bounded', async () => {
    const a = new EndpointState('pod-a', '127.0.0.1', 1, { connections: 1 });
    const b = new EndpointState('pod-b', '127.0.0.1', 2, { connections: 1 });
    const pods = new Map([[a.key, a], [b.key, b]]);
    const store1 = new PrefixStore(100, 1000);
    const store2 = new PrefixStore(100, 1000);
    const w1 = new PrefixShare(store1, (k) => pods.get(k));
    const w2 = new PrefixShare(store2, (k) => pods.get(k));
    const hub = new PrefixHub(3);

    store1.record(Uint32Array.of(11, 12), 2, a);
    const r = w1.report()!;
    expect(r).toEqual({ t: 'sched:prefix-new', pods: [a.key], pairs: [11, 0, 12, 0] });
    expect(w1.report()).toBeNull();
    // The same pairs again are not news; a changed pod is.
    store1.record(Uint32Array.of(11, 12), 2, a);
    expect(w1.report()).toBeNull();
    store1.record(Uint32Array.of(11), 1, b);
    expect(w1.report()).toEqual({ t: 'sched:prefix-new', pods: [b.key], pairs: [11, 0] });

    w2.apply(hub.report(r));
    expect(store2.get(11)).toBe(a);
    expect(store2.get(12)).toBe(a);
    // Learned pairs are not reported again by the worker that learned them.
    expect(w2.report()).toBeNull();

    hub.report({ pods: [b.key], pairs: [13, 0, 14, 0] });
    expect(hub.size).toBe(3);
    const all = hub.firstTime(9)!;
    expect(all.pairs.filter((_, i) => i % 2 === 0)).toEqual([12, 13, 14]);
    expect(hub.firstTime(9)).toBeNull();
    await Promise.all([a.pool.close(), b.pool.close()]);
  });

  it('a store that does not share keeps nothing to report; the share cap bounds the pending pairs', async () => {
    const a = new EndpointState('pod-a', '127.0.0.1', 1, { connections: 1 });
    const quiet = new PrefixStore(100);
    quiet.record(Uint32Array.of(1, 2, 3), 3, a);
    const seen: number[] = [];
    quiet.takeNew((h) => seen.push(h));
    expect(seen).toEqual([]);
    const capped = new PrefixStore(100, 2);
    capped.record(Uint32Array.of(1, 2, 3), 3, a);
    capped.takeNew((h) => seen.push(h));
    expect(seen).toEqual([1, 2]);
    await a.pool.close();
  });
});
