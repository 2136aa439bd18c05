/** idle-return's line per burst: the tail, the slow requests, and the episode that opens the burst (if any). */
import { describe, expect, it } from 'vitest';
import { burstLine } from '../../../bench/idle-return.js';
import type { LoadResult } from '../../../bench/load-types.js';

function result(episodes: { at_ms: number; span_ms: number; requests: number; max_ms: number }[]): LoadResult {
  return {
    tool: 'open-loop', requests: 12_000, seconds: 2, rps: 5_998.7, non2xx: 0, errors: 0, loadCpuMs: 0,
    latencyMs: { p50: 0.8, p99: 10.256, p999: 20, mean: 1, max: 25.78 },
    slow: { ms: 10, requests: episodes.reduce((a, e) => a + e.requests, 0), episodes: episodes.length, largest: episodes },
  };
}

describe('idle-return: a burst after a quiet spell', () => {
  it('names the episode scheduled at the burst\'s start', () => {
    const r = result([{ at_ms: 0, span_ms: 18.8, requests: 87, max_ms: 25.78 }, { at_ms: 508.8, span_ms: 2, requests: 9, max_ms: 11.39 }]);
    expect(burstLine(8, r)).toBe('after 8 s quiet: 5999 req/s, p99 10.26 ms, slowest 25.8 ms; 96 requests of 10 ms or more in 2 episodes, 87 at the start over 18.8 ms (slowest 25.8 ms)');
  });

  it('says none when the slow requests came later in the burst', () => {
    const r = result([{ at_ms: 750.8, span_ms: 20.2, requests: 11, max_ms: 12.03 }]);
    expect(burstLine(5, r)).toBe('after 5 s quiet: 5999 req/s, p99 10.26 ms, slowest 25.8 ms; 11 requests of 10 ms or more in 1 episodes, none at the start');
  });

  it('ends with the connections to the pod before and after the burst when they were counted', () => {
    const r = result([]);
    expect(burstLine(8, r, { before: 0, after: 37 })).toBe('after 8 s quiet: 5999 req/s, p99 10.26 ms, slowest 25.8 ms; 0 requests of 10 ms or more in 0 episodes, none at the start; connections to the pod 0 before, 37 after');
  });
});
