import { describe, expect, it } from 'vitest';
import { MonotoneSeries } from '../../../src/observe/metrics-monotone.js';

/** One scrape's shown values of the series given (name and labels → value as written). */
function scrape(m: MonotoneSeries, values: Record<string, string>): Record<string, string> {
  m.begin();
  const shown: Record<string, string> = {};
  for (const [series, text] of Object.entries(values)) shown[series] = m.shown(series, Number(text), text);
  m.end();
  return shown;
}

describe('MonotoneSeries: no counter or histogram series of the exposition goes down by a rounding step', () => {
  it('a sum a unit in the last place lower (the terms added in another order) is shown as the last one', () => {
    // 24.872294816999975 and 24.872294816999972: two orders of adding the same workers' sums.
    const m = new MonotoneSeries();
    expect(scrape(m, { 'd_sum{route="r"}': '24.872294816999975', 'c_total{pod="a"}': '5.1' })).toEqual({ 'd_sum{route="r"}': '24.872294816999975', 'c_total{pod="a"}': '5.1' });
    expect(scrape(m, { 'd_sum{route="r"}': '24.872294816999972', 'c_total{pod="a"}': '5.099999999999999' })).toEqual({ 'd_sum{route="r"}': '24.872294816999975', 'c_total{pod="a"}': '5.1' });
    // Still held the scrape after (the value held is the one compared with), then up again, past it: shown as it is.
    expect(scrape(m, { 'd_sum{route="r"}': '24.872294816999972' })).toEqual({ 'd_sum{route="r"}': '24.872294816999975' });
    expect(scrape(m, { 'd_sum{route="r"}': '25.5' })).toEqual({ 'd_sum{route="r"}': '25.5' });
  });

  it('a real drop (a series that came back from 0) goes through as it is', () => {
    const m = new MonotoneSeries();
    scrape(m, { 'd_sum{route="r"}': '24.87', 'c_total{pod="a"}': '5.1' });
    expect(scrape(m, { 'd_sum{route="r"}': '0.25', 'c_total{pod="a"}': '0' })).toEqual({ 'd_sum{route="r"}': '0.25', 'c_total{pod="a"}': '0' });
  });

  it('a series absent from a scrape starts afresh when it comes back', () => {
    const m = new MonotoneSeries();
    scrape(m, { 'd_sum{route="r"}': '24.872294816999975' });
    scrape(m, { 'g': '1' });
    expect(scrape(m, { 'd_sum{route="r"}': '24.872294816999972' })).toEqual({ 'd_sum{route="r"}': '24.872294816999972' });
  });

  it('a scrape begun and not ended (its sum failed) leaves the last shown values as they were', () => {
    const m = new MonotoneSeries();
    scrape(m, { 'd_sum{route="r"}': '24.872294816999975' });
    m.begin();
    m.shown('other', 1, '1');
    expect(scrape(m, { 'd_sum{route="r"}': '24.872294816999972' })).toEqual({ 'd_sum{route="r"}': '24.872294816999975' });
  });

  it('a last value of +Inf holds no later one: the drop from it is real', () => {
    const m = new MonotoneSeries();
    scrape(m, { c_total: '+Inf' });
    expect(scrape(m, { c_total: '3' })).toEqual({ c_total: '3' });
    expect(scrape(m, { c_total: '4' })).toEqual({ c_total: '4' });
  });
});
