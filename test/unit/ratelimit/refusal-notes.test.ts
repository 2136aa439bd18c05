/**
 * Refusal notes of the local mode (lease-book.ts, refusal-notes.ts): a worker refuses on its own,
 * without a message, what the primary has refused for good, and never what the primary would
 * admit once tokens come back. Several LocalLimitClients share one limit host over in-order,
 * JSON-copying channels.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { EventEmitter } from 'node:events';
import { spec, T0 } from './limit-spec.js';
import type { Decision } from '../../../src/ratelimit/limiter.js';
import { CounterStore } from '../../../src/ratelimit/local/counter-store.js';
import { LeaseBook } from '../../../src/ratelimit/local/lease-book.js';
import { DECISION_STRIDE, STATUS_REJECTED_INPUT } from '../../../src/ratelimit/decision-codec.js';
import { inProcessCluster, type InProcessCluster } from './in-process-cluster.js';
import { LocalLimitClient } from '../../../src/ratelimit/local/limit-client.js';
import { LimiterUnavailableError } from '../../../src/ratelimit/errors.js';

let now = T0;
const clock = (): number => now;

let c: InProcessCluster | null = null;
function cluster(workers: number, divisor = 8 * workers): InProcessCluster {
  now = T0;
  c = inProcessCluster(workers, clock, { leaseDivisor: divisor });
  return c;
}
afterEach(async () => {
  await c?.close();
  c = null;
});

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));
/** Lets every message on its way arrive (each hop is a turn). */
const settle = async (): Promise<void> => {
  for (let i = 0; i < 4; i++) await turn();
};

/** The decision when the worker made it without asking (not a Promise); fails otherwise. */
function fromWorker(d: Promise<Decision> | Decision): Decision {
  expect(d).not.toBeInstanceOf(Promise);
  return d as Decision;
}

/** The decision when the worker asked the primary for it (a Promise); fails otherwise. */
async function fromPrimary<T>(d: Promise<T> | T): Promise<T> {
  expect(d).toBeInstanceOf(Promise);
  return d;
}

describe('refusal notes', () => {
  it('a refusal for good leaves a note: the same refusal again is made in the worker, with the same figures, and no message', async () => {
    const cl = cluster(2);
    const limit = spec(100, null);
    const [a] = cl.clients;
    const first = await a.admit('ns/r', limit, 150); // more than the whole limit
    expect(first.rejectedBy).toBe('input');
    expect(a.notesHeld).toBe(1);
    const sent = cl.sentToPrimary[0];
    const again = fromWorker(a.admit('ns/r', limit, 150));
    expect(again).toEqual(first);
    expect(fromWorker(a.admit('ns/r', limit, 101)).rejectedBy).toBe('input');
    await settle();
    expect(cl.sentToPrimary[0]).toBe(sent);
  });

  it('with leases off there are no notes: every refusal is the primary\'s', async () => {
    const cl = cluster(1, 0); // no leases: every admission is the primary's
    const limit = spec(100, null);
    const [a] = cl.clients;
    expect(a.notesHeld).toBe(0);
    await a.admit('ns/r', limit, 70);
    expect((await a.admit('ns/r', limit, 40)).rejectedBy).toBe('input');
    expect(a.notesHeld).toBe(0);
    expect((await fromPrimary(a.admit('ns/r', limit, 40))).rejectedBy).toBe('input');
  });

  it('with leases on, only what the note refuses is refused in the worker; what fits is admitted by the primary', async () => {
    const cl = cluster(1, 8);
    const limit = spec(100, null);
    const [a] = cl.clients;
    const first = await a.admit('ns/r', limit, 70); // a lease of (100 - 70) / 8 = 3 < 2 × 70: none
    expect(first.allowed).toBe(true);
    expect(a.leasesHeld).toBe(0);
    expect((await a.admit('ns/r', limit, 40)).rejectedBy).toBe('input');
    expect(a.notesHeld).toBe(1);
    expect(fromWorker(a.admit('ns/r', limit, 31)).input).toEqual({ limit: 100, remaining: 30, resetSeconds: 40 });
    expect((await fromPrimary(a.admit('ns/r', limit, 30))).allowed).toBe(true);
  });

  it('another worker\'s give-back recalls the note: the request that now fits is admitted', async () => {
    const cl = cluster(2, 8);
    const limit = spec(100, null);
    const [a, b] = cl.clients;
    expect((await a.admit('ns/r', limit, 90)).allowed).toBe(true); // no lease: 10 free
    expect((await b.admit('ns/r', limit, 50)).rejectedBy).toBe('input');
    expect(b.notesHeld).toBe(1);
    expect(fromWorker(b.admit('ns/r', limit, 50)).rejectedBy).toBe('input');
    a.adjustInput('ns/r', limit, -60); // a's request never reached a pod, in part
    await settle();
    expect(b.notesHeld).toBe(0);
    expect((await fromPrimary(b.admit('ns/r', limit, 50))).allowed).toBe(true);
  });

  it('the figures of a note\'s refusals follow what other workers use, as a lease\'s do', async () => {
    const cl = cluster(2, 8);
    const limit = spec(100, 1000);
    const [a, b] = cl.clients;
    await a.admit('ns/r', limit, 60);
    expect((await b.admit('ns/r', limit, 50)).input?.remaining).toBe(40);
    await a.admit('ns/r', limit, 30); // no lease: (100 - 60) / 16 < 60
    a.chargeOutput('ns/r', limit, 250);
    await settle();
    const d = fromWorker(b.admit('ns/r', limit, 50));
    expect(d.input).toEqual({ limit: 100, remaining: 10, resetSeconds: 40 });
    expect(d.output).toEqual({ limit: 1000, remaining: 750, resetSeconds: 40 });
  });

  it('a newer note made at a higher count is recalled by a give-back that stays above the older one\'s count', async () => {
    const cl = cluster(2, 8);
    const limit = spec(100, null);
    const [a, b] = cl.clients;
    await a.admit('ns/r', limit, 10); // no lease: 11 < 20
    expect((await b.admit('ns/r', limit, 95)).rejectedBy).toBe('input'); // a note made at 10
    await a.admit('ns/r', limit, 40); // 50
    expect((await fromPrimary(b.admit('ns/r', limit, 60))).rejectedBy).toBe('input'); // 10 + 60 fits the old note: asked; a note made at 50
    expect(fromWorker(b.admit('ns/r', limit, 60)).rejectedBy).toBe('input');
    a.adjustInput('ns/r', limit, -20); // 30: below the newer note's count, above the older one's
    await settle();
    expect((await fromPrimary(b.admit('ns/r', limit, 60))).allowed).toBe(true); // 30 + 60 <= 100
  });

  it('a count that only grows keeps the notes out', async () => {
    const cl = cluster(2, 8);
    const limit = spec(100, 1000);
    const [a, b] = cl.clients;
    await a.admit('ns/r', limit, 90);
    await b.admit('ns/r', limit, 50);
    expect(b.notesHeld).toBe(1);
    a.adjustInput('ns/r', limit, 5);
    a.chargeOutput('ns/r', limit, 100);
    await settle();
    expect(b.notesHeld).toBe(1);
    expect(fromWorker(b.admit('ns/r', limit, 50)).rejectedBy).toBe('input');
  });

  it('the worker\'s own give-back drops its note at once: its next request asks the primary, which has the give-back first', async () => {
    const cl = cluster(1, 8);
    const limit = spec(100, null);
    const [a] = cl.clients;
    await a.admit('ns/r', limit, 90);
    expect((await a.admit('ns/r', limit, 50)).rejectedBy).toBe('input');
    expect(a.notesHeld).toBe(1);
    a.adjustInput('ns/r', limit, -60);
    expect(a.notesHeld).toBe(0);
    expect((await fromPrimary(a.admit('ns/r', limit, 50))).allowed).toBe(true);
  });

  it('the output limit reached: every request is refused in the worker, by input first when its tokens do not fit, until the window ends', async () => {
    const cl = cluster(1, 8);
    const limit = spec(100, 50);
    const [a] = cl.clients;
    expect((await a.admit('ns/r', limit, 60)).allowed).toBe(true); // no lease: (100 - 60) / 8 < 120
    a.chargeOutput('ns/r', limit, 50);
    await settle();
    const refused = await a.admit('ns/r', limit, 1);
    expect(refused.rejectedBy).toBe('output');
    expect(refused.output).toEqual({ limit: 50, remaining: 0, resetSeconds: 40 });
    expect(fromWorker(a.admit('ns/r', limit, 1)).rejectedBy).toBe('output');
    expect(fromWorker(a.admit('ns/r', limit, 41)).rejectedBy).toBe('input');
    // A give-back lowers the input count, never the output's: still refused, now by output.
    a.adjustInput('ns/r', limit, -60);
    expect((await a.admit('ns/r', limit, 41)).rejectedBy).toBe('output');
    expect(fromWorker(a.admit('ns/r', limit, 41)).rejectedBy).toBe('output');
    now = Date.UTC(2025, 0, 15, 10, 31, 0); // the next minute
    expect((await fromPrimary(a.admit('ns/r', limit, 1))).allowed).toBe(true);
  });

  it('a request under other limits (a config edit) asks the primary', async () => {
    const cl = cluster(1, 8);
    const [a] = cl.clients;
    expect((await a.admit('ns/r', spec(100, null), 150)).rejectedBy).toBe('input');
    expect(a.notesHeld).toBe(1);
    expect((await fromPrimary(a.admit('ns/r', spec(200, null), 150))).allowed).toBe(true);
  });

  it('budget sitting in another worker\'s lease is recalled, not noted: the request that fits with it is admitted', async () => {
    const cl = cluster(2, 2); // big leases: half of what is free
    const limit = spec(100, null);
    const [a, b] = cl.clients;
    expect((await a.admit('ns/r', limit, 10)).allowed).toBe(true); // a holds a lease of 45
    const d = await b.admit('ns/r', limit, 90);
    expect(d.allowed).toBe(true);
    expect(b.notesHeld).toBe(0);
  });

  it('a note made while another worker holds a lease does not refuse what fits with that lease back', async () => {
    const cl = cluster(2, 2);
    const limit = spec(100, null);
    const [a, b] = cl.clients;
    await a.admit('ns/r', limit, 10); // a holds a lease of 45: the count is 55
    expect((await b.admit('ns/r', limit, 30)).allowed).toBe(true); // 85; no lease (7 < 60)
    expect((await b.admit('ns/r', limit, 70)).rejectedBy).toBe('input'); // 40 + 70 > 100 even with the lease back
    expect(b.notesHeld).toBe(1);
    // 40 + 50 fits once a's lease is back: the primary recalls it and admits.
    expect((await fromPrimary(b.admit('ns/r', limit, 50))).allowed).toBe(true);
    expect(a.leasesHeld).toBe(0);
  });
});

describe('refusal notes of multi-limit admissions (route and tenant)', () => {
  const route = spec(1000, null);
  const tenant = spec(100, 500, 'hour');
  const terms = [{ key: 'ns/r', limit: route }, { key: 'tenant:key:t', limit: tenant }];

  it('a tenant over its budget: its refusal notes both limits, and the same request again is refused in the worker with the same decisions', async () => {
    const cl = cluster(2);
    const [a] = cl.clients;
    expect((await a.admitAll(terms, 90)).map((d) => d.allowed)).toEqual([true, true]);
    const first = await a.admitAll(terms, 20); // 90 + 20 > 100 for the tenant; the route has room
    expect(first.map((d) => d.rejectedBy)).toEqual([null, 'input']);
    expect(a.notesHeld).toBe(2);
    const sent = cl.sentToPrimary[0];
    const again = a.admitAll(terms, 20);
    expect(again).not.toBeInstanceOf(Promise);
    expect(again).toEqual(first);
    await settle();
    expect(cl.sentToPrimary[0]).toBe(sent);
    // The route's note refuses nothing: a request of the route alone is the primary's (or a lease's).
    expect((await a.admit('ns/r', route, 20)).allowed).toBe(true);
    // A request that fits the tenant's budget asks the primary.
    expect((await fromPrimary(a.admitAll(terms, 10))).map((d) => d.allowed)).toEqual([true, true]);
  });

  it('both limits refusing: the worker\'s decisions are the primary\'s', async () => {
    const cl = cluster(1, 0); // leases off: every decision below is the primary's, for reference
    const ref = cl.clients[0];
    const small = [{ key: 'ns/r', limit: spec(50, null) }, { key: 'tenant:key:t', limit: tenant }];
    await ref.admitAll(small, 45);
    const primary = await ref.admitAll(small, 60); // both refuse by input
    await cl.close();
    const cl2 = cluster(1);
    const [a] = cl2.clients;
    await a.admitAll(small, 45);
    expect(await a.admitAll(small, 60)).toEqual(primary);
    expect(a.admitAll(small, 60)).toEqual(primary);
  });

  it('a give-back to the route recalls its note: the tenant\'s next request asks the primary', async () => {
    const cl = cluster(2);
    const [a, b] = cl.clients;
    await a.admitAll(terms, 90);
    await b.admit('ns/r', route, 500); // no lease: 25 < 1000
    await a.admitAll(terms, 20); // the route's note is made with 590
    expect(a.notesHeld).toBe(2);
    b.adjustInput('ns/r', route, -500); // b's request never reached a pod
    await settle();
    expect(a.notesHeld).toBe(1); // the tenant's stands
    expect((await fromPrimary(a.admitAll(terms, 20))).map((x) => x.rejectedBy)).toEqual([null, 'input']);
    expect(a.notesHeld).toBe(2);
  });

  it('no notes when a limit is a shadow limit', async () => {
    const cl = cluster(1);
    const [a] = cl.clients;
    const shadowed = [{ key: 'ns/r', limit: { ...route, mode: 'shadow' as const } }, { key: 'tenant:key:t', limit: tenant }];
    await a.admitAll(shadowed, 90);
    expect((await a.admitAll(shadowed, 20)).map((d) => d.rejectedBy)).toEqual([null, 'input']);
    expect(a.notesHeld).toBe(0);
  });
});

describe('the lease book\'s refusal notes', () => {
  function book(): { book: LeaseBook<string>; replies: Map<string, number[]>; recalls: Map<string, number[]> } {
    const replies = new Map<string, number[]>();
    const recalls = new Map<string, number[]>();
    const into = (m: Map<string, number[]>, w: string): number[] => {
      let a = m.get(w);
      if (a === undefined) m.set(w, a = []);
      return a;
    };
    const b = new LeaseBook<string>(new CounterStore(clock), {
      divisor: 8,
      recallTimeoutMs: 1_000,
      replyTo: (w) => into(replies, w),
      recall: (w, ids) => { into(recalls, w).push(...ids); },
      usageTo: () => [],
      changed: () => {},
    });
    return { book: b, replies, recalls };
  }
  const noteAt = 1 + DECISION_STRIDE;

  it('is made against the input count with every lease given back, and recalled once a give-back takes the count below it', () => {
    now = T0;
    const { book: lb, replies, recalls } = book();
    lb.admit('a', 1, 'ns/r', 1000, null, 'minute', 10); // a: lease (1000 - 10) / 8 = 123
    lb.admit('b', 2, 'ns/r', 1000, null, 'minute', 700); // 10 + 123 + 700 = 833: admitted, no lease (20 < 1400)
    lb.admit('b', 3, 'ns/r', 1000, null, 'minute', 300); // 710 + 300 > 1000 even with a's lease back: refused for good
    const r = replies.get('b')!.slice(-(1 + DECISION_STRIDE + 4));
    expect(r[1]).toBe(STATUS_REJECTED_INPUT);
    expect(r[noteAt]).toBeGreaterThan(0); // the note's id
    expect(r[noteAt + 1]).toBe(710); // the count without a's lease
    expect(r[noteAt + 2]).toBe(0); // no output limit reached
    expect(r[noteAt + 3]).toBe(Date.UTC(2025, 0, 15, 10, 31, 0));
    // a's lease back with 23 unused: the count is 810, not below 710: the note stands.
    lb.leaseUsed('a', replies.get('a')![noteAt], 'ns/r', 'minute', 100);
    lb.giveBack('a', replies.get('a')![noteAt], 'ns/r', 'minute', 23);
    expect(recalls.get('b')).toBeUndefined();
    lb.adjust('ns/r', 'minute', -101); // 709 < 710
    expect(recalls.get('b')).toEqual([r[noteAt]]);
  });

  it('the records of ended windows are dropped: keys refused once and never used again are not kept', () => {
    now = T0;
    const { book: lb } = book();
    for (let k = 0; k < 100; k++) lb.admit('a', k + 1, `tenant/key/t${k}`, 10, null, 'minute', 20); // each refused, noted
    expect(lb.size).toBe(100);
    now = T0 + 30_000; // the next minute, before a sweep is due: records stay until their key is used or swept
    lb.admit('a', 101, 'ns/r', 1000, null, 'minute', 10);
    expect(lb.size).toBe(101);
    now = T0 + 61_000; // a sweep is due
    lb.admit('a', 102, 'ns/r', 1000, null, 'minute', 10);
    expect(lb.size).toBe(1); // ns/r's lease of this window
  });

  it('a worker that went away is not asked to drop its note', () => {
    now = T0;
    const { book: lb, recalls } = book();
    lb.admit('a', 1, 'ns/r', 100, null, 'minute', 90);
    lb.admit('b', 2, 'ns/r', 100, null, 'minute', 50);
    lb.forgetWorker('b');
    lb.adjust('ns/r', 'minute', -50);
    expect(recalls.get('b')).toBeUndefined();
  });
});

describe('a refusal note in a late answer', () => {
  it('is not taken, and the older note of its key goes too (the primary would recall only the newer one)', async () => {
    now = T0;
    const sent: { a: (number | string)[] }[] = [];
    const port = Object.assign(new EventEmitter(), {
      connected: true,
      send: (m: { a: (number | string)[] }, _h: undefined, cb: (e: Error | null) => void): boolean => {
        sent.push(m);
        cb(null);
        return true;
      },
    });
    const client = new LocalLimitClient({ port: port as never, timeoutMs: 20, clock });
    const limit = spec(100, null);
    const end = Date.UTC(2025, 0, 15, 10, 31, 0);
    /** A refusal by input of request `id` with note `noteId` made with `basis`. */
    const refusal = (id: number, noteId: number, basis: number): number[] => [id, 1, 40, 100, 100 - basis, 40, -1, 0, 0, noteId, basis, 0, end];
    const first = client.admit('ns/r', limit, 150);
    await turn();
    const id1 = sent[0].a[1] as number;
    port.emit('message', { t: 'rl:r', a: refusal(id1, 5, 0) });
    expect((await first).rejectedBy).toBe('input');
    expect(client.notesHeld).toBe(1);
    // 50 fits what the note says: asked, and not answered in time.
    const second = client.admit('ns/r', limit, 50);
    expect(second).toBeInstanceOf(Promise);
    await expect(second).rejects.toBeInstanceOf(LimiterUnavailableError);
    const id2 = sent[1].a[1] as number;
    port.emit('message', { t: 'rl:r', a: refusal(id2, 9, 60) });
    expect(client.notesHeld).toBe(0);
    await client.close();
  });
});
