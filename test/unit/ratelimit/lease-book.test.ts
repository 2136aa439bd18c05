/**
 * The primary's lease book (lease-book.ts) at the edge of a window: a decision reads the clock
 * once, so its counts, its headers' figures and any lease it grants are all of one window, even
 * when the window ends while it is being made.
 */
import { describe, expect, it } from 'vitest';
import { DECISION_STRIDE, STATUS_ALLOWED } from '../../../src/ratelimit/decision-codec.js';
import { CounterStore } from '../../../src/ratelimit/local/counter-store.js';
import { LeaseBook } from '../../../src/ratelimit/local/lease-book.js';

const LIMIT = 1_600;

/** A book whose clock reads `next` once (when set), then `at` (ms). */
function bookWithClock(): { book: LeaseBook<string>; replies: Map<string, number[]>; clock: { at: number; next: number | null } } {
  const clock = { at: 500, next: null as number | null };
  const store = new CounterStore(() => {
    if (clock.next === null) return clock.at;
    const t = clock.next;
    clock.next = null;
    return t;
  });
  const replies = new Map<string, number[]>();
  const book = new LeaseBook<string>(store, {
    divisor: 16,
    recallTimeoutMs: 1_000,
    replyTo: (w) => {
      let a = replies.get(w);
      if (a === undefined) replies.set(w, a = []);
      return a;
    },
    recall: () => {},
    usageTo: () => [],
    changed: () => {},
  });
  return { book, replies, clock };
}

describe('the lease book at the end of a window', () => {
  it('a decision whose window ends while it is made reports the remaining input of its own window, never more than the limit', () => {
    const { book, replies, clock } = bookWithClock();
    book.admit('a', 1, 'route/default/r', LIMIT, null, 'second', 10); // a holds a lease of this second's window
    const a = replies.get('a')!;
    expect(a[1]).toBe(STATUS_ALLOWED);
    expect(a[1 + DECISION_STRIDE + 1]).toBe(Math.floor((LIMIT - 10) / 16)); // the lease's input
    clock.at = 1_000; // the next second...
    clock.next = 999; // ...after one more reading in this one
    book.admit('b', 2, 'route/default/r', LIMIT, null, 'second', 10);
    const b = replies.get('b')!;
    expect(b[1]).toBe(STATUS_ALLOWED);
    expect(b[4]).toBe(LIMIT - 20); // what requests used in that window: 10 + 10 (a's lease is not used)
  });

  it('the same for a decision against a route\'s and a tenant\'s limit', () => {
    const { book, replies, clock } = bookWithClock();
    const terms = [
      { key: 'route/default/r', inLimit: LIMIT, outLimit: null, unit: 'second' as const, shadow: false },
      { key: 'tenant/key/t', inLimit: LIMIT, outLimit: null, unit: 'second' as const, shadow: false },
    ];
    book.admitAll('a', 1, terms, 10);
    clock.at = 1_000;
    clock.next = 999;
    book.admitAll('b', 2, terms, 10);
    const b = replies.get('b')!;
    const record = 1 + DECISION_STRIDE + 4; // id, the decision, the lease
    for (let k = 0; k < terms.length; k++) {
      expect(b[k * record + 1]).toBe(STATUS_ALLOWED);
      expect(b[k * record + 4]).toBe(LIMIT - 20);
    }
  });
});
