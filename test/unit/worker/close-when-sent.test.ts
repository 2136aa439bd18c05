import { describe, expect, it } from 'vitest';
import { closeWhenSent, type SentWatch } from '../../../src/worker/close-when-sent.js';

/** A watch whose queues, requests in flight and clock follow the given sequences, one step per look. */
function scripted(opts: { unsent: (number | null)[]; inflight?: number[]; tail?: boolean[]; lookMs?: number; deadline?: number }) {
  let look = 0;
  let closedAt = -1;
  let clock = 0;
  const at = <T>(xs: T[], fallback: T): T => (xs.length === 0 ? fallback : xs[Math.min(look, xs.length - 1)]!);
  const w: SentWatch = {
    inflight: () => at(opts.inflight ?? [], 0),
    unsent: () => at(opts.unsent, 0),
    tailMayBeBuffered: () => at(opts.tail ?? [], false),
    close: () => { closedAt = look; },
    deadline: opts.deadline ?? 1_000_000,
    // Each look reads the clock once after its checks: the look ends there.
    now: () => { const t = clock; clock += opts.lookMs ?? 20; look++; return t; },
  };
  return { w, closedAt: () => closedAt, looks: () => look };
}

describe('closeWhenSent', () => {
  it('closes once the queues were seen empty twice in a row, nothing in flight', async () => {
    const s = scripted({ unsent: [0, 4096, 0, 0] });
    expect(await closeWhenSent(s.w)).toBe(true);
    // Looks 0 (empty), 1 (4096 queued: starts again), 2 and 3 (empty twice): closed at the fourth.
    expect(s.closedAt()).toBe(3);
  });

  it('does not count looks while a request is in flight', async () => {
    const s = scripted({ unsent: [0], inflight: [1, 1, 1, 0] });
    expect(await closeWhenSent(s.w)).toBe(true);
    expect(s.closedAt()).toBe(4);
  });

  it('without the queues, closes when no answer may have left bytes in uWS, at once', async () => {
    const s = scripted({ unsent: [null] });
    expect(await closeWhenSent(s.w)).toBe(true);
    expect(s.closedAt()).toBe(0);
    const held = scripted({ unsent: [null], tail: [true, true, false] });
    expect(await closeWhenSent(held.w)).toBe(true);
    expect(held.closedAt()).toBe(2);
  });

  it('gives up at the deadline without closing while bytes stay queued', async () => {
    const s = scripted({ unsent: [100], deadline: 70, lookMs: 20 });
    expect(await closeWhenSent(s.w)).toBe(false);
    expect(s.closedAt()).toBe(-1);
    // Looks at 0, 20, 40, 60; the clock reads 80 at the fifth, past the deadline.
    expect(s.looks()).toBe(5);
  });
});
