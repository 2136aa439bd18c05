import { describe, expect, it } from 'vitest';
import { formatTraceparent, newSpanId, newTraceId, parseTraceparent } from '../../../src/observe/trace-ids.js';

describe('trace ids and traceparent', () => {
  it('makes distinct lower-case hex ids of the W3C lengths', () => {
    const traces = new Set<string>();
    const spans = new Set<string>();
    for (let i = 0; i < 2000; i++) {
      traces.add(newTraceId());
      spans.add(newSpanId());
    }
    expect(traces.size).toBe(2000);
    expect(spans.size).toBe(2000);
    for (const t of traces) expect(t).toMatch(/^[0-9a-f]{32}$/);
    for (const s of spans) expect(s).toMatch(/^[0-9a-f]{16}$/);
  });

  it('parses valid values and the sampled flag', () => {
    expect(parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'))
      .toEqual({ traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', sampled: true });
    expect(parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00')!.sampled).toBe(false);
    // A later version may add fields; its first four are read.
    expect(parseTraceparent('01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03-extra')!.sampled).toBe(true);
  });

  it.each([
    '', 'garbage', 'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
    '00-00000000000000000000000000000000-00f067aa0ba902b7-01', '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01',
    '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x',
    '00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01',
  ])('rejects %j', (v) => {
    expect(parseTraceparent(v)).toBeNull();
  });

  it('formats version 00', () => {
    expect(formatTraceparent('4bf92f3577b34da6a3ce929d0e0e4736', '00f067aa0ba902b7', true)).toBe('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
    expect(formatTraceparent('4bf92f3577b34da6a3ce929d0e0e4736', '00f067aa0ba902b7', false)).toMatch(/-00$/);
  });
});
