import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { PrimaryHeartbeat } from '../../../src/worker/primary-heartbeat.js';
import { startTicking, stopTicking } from '../../../src/interval-ticker.js';

describe('PrimaryHeartbeat', () => {
  let now = 0;
  let pings = 0;
  let logs: string[] = [];
  let hb: PrimaryHeartbeat;

  beforeEach(() => {
    vi.useFakeTimers();
    now = 0;
    pings = 0;
    logs = [];
    hb = new PrimaryHeartbeat({ everyMs: 1000, boundMs: 3000, ping: () => { pings++; }, log: (level, m) => logs.push(`${level} ${m}`), now: () => now });
    hb.start();
  });
  afterEach(() => {
    hb.stop();
    vi.useRealTimers();
  });

  /** Moves the injected clock and the timers together. */
  function advance(ms: number, step = 100): void {
    for (let t = 0; t < ms; t += step) {
      now += step;
      vi.advanceTimersByTime(step);
    }
  }

  it("ticks on the process's timer of its period: beside the pod-load report (also 1 s) there is one timer, and both tick", () => {
    let reports = 0;
    const podLoadReport = { advance: (): void => { reports++; } };
    startTicking(podLoadReport, 1000);
    expect(vi.getTimerCount()).toBe(1);
    advance(2000);
    expect(reports).toBe(2);
    expect(pings).toBe(2); // the heartbeat ticked too: quiet for 2 s at its second tick
    stopTicking(podLoadReport, 1000);
    hb.stop();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('pings at start, then only once the primary has been quiet for 1.5 intervals', () => {
    expect(pings).toBe(1);
    advance(1000); // tick at 1000: quiet for 1000 ms
    expect(pings).toBe(1);
    advance(1000); // tick at 2000: quiet for 2000 ms
    expect(pings).toBe(2);
  });

  it('does not ping while the primary speaks anyway (a message every second, as the pod-load share)', () => {
    for (let s = 0; s < 10; s++) {
      advance(500);
      hb.heard();
      advance(500);
    }
    expect(pings).toBe(1);
    expect(hb.alive()).toBe(true);
  });

  it('pings again when the primary falls quiet, and keeps readiness while pongs come', () => {
    for (let s = 0; s < 5; s++) {
      advance(1000);
      if (pings > 1) hb.heard(); // the pong of a ping
    }
    expect(pings).toBeGreaterThan(1);
    expect(hb.alive()).toBe(true);
    expect(logs).toEqual([]);
  });

  it('is not alive after the bound without any message, logs it once, and recovers on the next message', () => {
    advance(3100);
    expect(hb.alive()).toBe(false);
    expect(hb.alive()).toBe(false);
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatch(/^warn the primary has not answered a heartbeat for \d+ ms/);
    expect(pings).toBeGreaterThanOrEqual(2); // it kept asking
    hb.heard();
    expect(hb.alive()).toBe(true);
    expect(logs[1]).toBe('info the primary answers again; readiness restored');
  });
});
