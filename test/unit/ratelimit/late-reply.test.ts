/**
 * awaitReply: the limiter's own timeout of a script call, and how long a reply that comes after it
 * is still read (LATE_REPLY_MS from the call). Script calls keep no timer of the client's
 * (script-command.ts), so this bound is the limiter's alone. Timers and Date are faked.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { awaitReply, LATE_REPLY_MS } from '../../../src/ratelimit/redis/late-reply.js';

const TIMEOUT = 250;

function deferred(): { promise: Promise<string>; resolve: (v: string) => void; reject: (e: Error) => void } {
  let resolve!: (v: string) => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<string>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

function watch(call: Promise<string>): string[] {
  const seen: string[] = [];
  awaitReply(call, TIMEOUT, {
    reply: (v) => seen.push(`reply ${v}`),
    fail: (err) => seen.push(`fail ${(err as Error).message}`),
    late: (v) => seen.push(`late ${v}`),
  });
  return seen;
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
});

afterEach(() => {
  vi.useRealTimers();
});

describe('awaitReply', () => {
  it('a reply within the timeout is the reply, and nothing fails after it', async () => {
    const d = deferred();
    const seen = watch(d.promise);
    await vi.advanceTimersByTimeAsync(TIMEOUT - 1);
    d.resolve('ok');
    await vi.advanceTimersByTimeAsync(LATE_REPLY_MS);
    expect(seen).toEqual(['reply ok']);
  });

  it('no reply within the timeout fails the call; a reply up to LATE_REPLY_MS after the call is read late', async () => {
    const d = deferred();
    const seen = watch(d.promise);
    await vi.advanceTimersByTimeAsync(TIMEOUT);
    expect(seen).toEqual(['fail Command timed out']);
    await vi.advanceTimersByTimeAsync(LATE_REPLY_MS - TIMEOUT - 1);
    d.resolve('ran late');
    await vi.advanceTimersByTimeAsync(0);
    expect(seen).toEqual(['fail Command timed out', 'late ran late']);
  });

  it('a reply later than LATE_REPLY_MS after the call is dropped', async () => {
    const d = deferred();
    const seen = watch(d.promise);
    await vi.advanceTimersByTimeAsync(LATE_REPLY_MS + 1);
    d.resolve('too late');
    await vi.advanceTimersByTimeAsync(0);
    expect(seen).toEqual(['fail Command timed out']);
  });

  it('an error after the timeout changes nothing; one before it fails the call once', async () => {
    const late = deferred();
    const seenLate = watch(late.promise);
    await vi.advanceTimersByTimeAsync(TIMEOUT);
    late.reject(new Error('Connection is closed.'));
    const early = deferred();
    const seenEarly = watch(early.promise);
    early.reject(new Error('NOPERM'));
    await vi.advanceTimersByTimeAsync(TIMEOUT * 2);
    expect(seenLate).toEqual(['fail Command timed out']);
    expect(seenEarly).toEqual(['fail NOPERM']);
  });
});
