import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { startTicking, stopTicking, type Ticking } from '../../src/interval-ticker.js';

function member(): Ticking & { ticks: number } {
  const m = { ticks: 0, advance(): void { m.ticks++; } };
  return m;
}

describe('interval ticker', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('ticks every member of a resolution from one timer, and stops it with the last member', () => {
    const pools = Array.from({ length: 20 }, member);
    for (const p of pools) startTicking(p, 100);
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(300);
    expect(pools.map((p) => p.ticks)).toEqual(pools.map(() => 3));
    for (const p of pools.slice(1)) stopTicking(p, 100);
    vi.advanceTimersByTime(100);
    expect(pools[0].ticks).toBe(4);
    expect(pools[1].ticks).toBe(3);
    expect(vi.getTimerCount()).toBe(1);
    stopTicking(pools[0], 100);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('advances a member started twice once per tick (a pool joins again with each new connection)', () => {
    const pool = member();
    startTicking(pool, 100);
    startTicking(pool, 100);
    vi.advanceTimersByTime(200);
    expect(pool.ticks).toBe(2);
    stopTicking(pool, 100);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('keeps one timer per resolution', () => {
    const fine = member();
    const coarse = member();
    startTicking(fine, 10);
    startTicking(coarse, 1000);
    expect(vi.getTimerCount()).toBe(2);
    vi.advanceTimersByTime(1000);
    expect(fine.ticks).toBe(100);
    expect(coarse.ticks).toBe(1);
    stopTicking(fine, 10);
    stopTicking(coarse, 1000);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('lets a member stop itself while it is advanced, and ignores a member stopped twice', () => {
    const others = [member(), member()];
    const quitter: Ticking = { advance: () => stopTicking(quitter, 50) };
    startTicking(others[0], 50);
    startTicking(quitter, 50);
    startTicking(others[1], 50);
    vi.advanceTimersByTime(100);
    expect(others.map((m) => m.ticks)).toEqual([2, 2]);
    stopTicking(quitter, 50);
    stopTicking(others[0], 50);
    stopTicking(others[1], 50);
    expect(vi.getTimerCount()).toBe(0);
  });
});
