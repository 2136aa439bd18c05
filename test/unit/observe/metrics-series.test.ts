/** The counter family's children: one per label set, whichever way it is asked for. */
import { describe, expect, it } from 'vitest';
import { CounterFamily } from '../../../src/observe/metrics-series.js';

describe('CounterFamily', () => {
  it('childOf(value) is the child of that one label value, the same series as child(value), kept', async () => {
    const f = new CounterFamily('test_events_total', 'Events.', ['pod']);
    const a = f.childOf('pod-a');
    expect(a.labels).toEqual({ pod: 'pod-a' });
    expect(f.childOf('pod-a')).toBe(a);
    expect(f.child('pod-a')).toBe(a);
    a.value++;
    f.childOf('pod-b').value += 2;
    f.child('pod-a').value++;
    const json = await f.get();
    expect(json.values).toEqual([
      { labels: { pod: 'pod-a' }, value: 2 },
      { labels: { pod: 'pod-b' }, value: 2 },
    ]);
    f.reset();
    expect((await f.get()).values.map((v) => v.value)).toEqual([0, 0]);
  });
});
