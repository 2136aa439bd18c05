import { describe, expect, it } from 'vitest';
import { MonotoneSeries } from '../../../src/observe/metrics-monotone.js';

const text = (sum: string, count: number, gauge: number, counter: string): string => [
  '# HELP d Request duration.',
  '# TYPE d histogram',
  `d_bucket{le="+Inf",route="r"} ${count}`,
  `d_sum{route="r"} ${sum}`,
  `d_count{route="r"} ${count}`,
  '',
  '# HELP g In flight.',
  '# TYPE g gauge',
  `g ${gauge}`,
  '',
  '# HELP c Seconds.',
  '# TYPE c counter',
  `c_total{pod="a"} ${counter}`,
  '',
].join('\n');

describe('MonotoneSeries: no counter or histogram series of the exposition goes down by a rounding step', () => {
  it('a sum a unit in the last place lower (the terms added in another order) is shown as the last one', () => {
    // 24.872294816999975 and 24.872294816999972: two orders of adding the same workers' sums.
    const m = new MonotoneSeries();
    expect(m.apply(text('24.872294816999975', 10, 3, '5.1'))).toBe(text('24.872294816999975', 10, 3, '5.1'));
    expect(m.apply(text('24.872294816999972', 10, 1, '5.099999999999999'))).toBe(text('24.872294816999975', 10, 1, '5.1'));
    // Then up again, past it: shown as it is.
    expect(m.apply(text('25.5', 11, 1, '5.2'))).toBe(text('25.5', 11, 1, '5.2'));
  });

  it('a real drop (a series that came back from 0), and any gauge, go through as they are', () => {
    const m = new MonotoneSeries();
    m.apply(text('24.87', 10, 3, '5.1'));
    expect(m.apply(text('0.25', 1, 9, '0'))).toBe(text('0.25', 1, 9, '0'));
  });

  it('a series absent from a scrape starts afresh when it comes back', () => {
    const m = new MonotoneSeries();
    m.apply(text('24.872294816999975', 10, 3, '5.1'));
    m.apply('# TYPE g gauge\ng 1\n');
    expect(m.apply(text('24.872294816999972', 10, 3, '5.1'))).toBe(text('24.872294816999972', 10, 3, '5.1'));
  });
});
