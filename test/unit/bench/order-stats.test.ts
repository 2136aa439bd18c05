import { describe, expect, it } from 'vitest';
import { median, percentile } from '../../../bench/order-stats.js';

describe('median', () => {
  it('the middle value of an odd count, the mean of the middle two of an even count; the input is not reordered', () => {
    const xs = [5, 1, 3];
    expect(median(xs)).toBe(3);
    expect(xs).toEqual([5, 1, 3]);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([7])).toBe(7);
  });

  it('NaN when there is nothing to take it of', () => {
    expect(median([])).toBeNaN();
  });
});

describe('percentile (nearest rank)', () => {
  const hundred = Array.from({ length: 100 }, (_, i) => i + 1); // 1..100

  it('the smallest value with at least q of the samples at or below it', () => {
    expect(percentile(hundred, 0.5)).toBe(50);
    expect(percentile(hundred, 0.99)).toBe(99);
    expect(percentile(hundred, 0.999)).toBe(100);
    expect(percentile(hundred, 1)).toBe(100);
    expect(percentile([10, 20, 30], 0.5)).toBe(20);
    expect(percentile([10, 20, 30], 0.34)).toBe(20);
    expect(percentile([10, 20, 30], 0.33)).toBe(10);
  });

  it('a typed array, one sample, and none', () => {
    expect(percentile(Float64Array.of(1, 2, 3, 4), 0.75)).toBe(3);
    expect(percentile([0.2], 0.99)).toBe(0.2);
    expect(percentile([], 0.5)).toBeNaN();
  });
});
