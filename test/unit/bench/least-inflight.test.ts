import { describe, expect, it } from 'vitest';
import { pickLeastInflight } from '../../../bench/least-inflight.js';
// The type the module under test takes: bench code imports the built package (dist/), not src/.
import type { EndpointState } from 'inference-router/upstream/endpoint-registry';

const ep = (name: string, inflight: number, ejectedUntil = 0) => ({ name, inflight, health: { ejectedUntil } }) as unknown as EndpointState;

describe('pickLeastInflight', () => {
  it('picks the endpoint with the fewest in-flight requests', () => {
    const list = [ep('a', 3), ep('b', 1), ep('c', 2)];
    expect(pickLeastInflight(list, null)?.name).toBe('b');
  });

  it('is random among ties: every tied endpoint can win, a busier one never does', () => {
    const list = [ep('a', 0), ep('b', 0), ep('c', 5), ep('d', 0)];
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) seen.add(pickLeastInflight(list, null)!.name);
    expect([...seen].sort()).toEqual(['a', 'b', 'd']);
  });

  it('skips excluded endpoints and returns null when none is left', () => {
    const a = ep('a', 0);
    const b = ep('b', 9);
    expect(pickLeastInflight([a, b], [a])?.name).toBe('b');
    expect(pickLeastInflight([a, b], [a, b])).toBeNull();
    expect(pickLeastInflight([], null)).toBeNull();
  });

  it('leaves ejected endpoints out while another is in rotation, and tries them when all are ejected', () => {
    const a = ep('a', 0, 2000);
    const b = ep('b', 7);
    const c = ep('c', 0, 1500);
    expect(pickLeastInflight([a, b, c], null, Math.random, 1000)?.name).toBe('b');
    // b tried already: of the ejected ones, the one whose interval ends first.
    expect(pickLeastInflight([a, b, c], [b], Math.random, 1000)?.name).toBe('c');
    // At 2500 both intervals are over: back in rotation, fewest in flight wins.
    expect(pickLeastInflight([a, b, c], null, () => 0.99, 2500)?.name).toBe('a');
  });
});
