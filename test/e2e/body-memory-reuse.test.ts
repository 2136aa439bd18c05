import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { MAX_FREE_BYTES, MAX_FREE_SHARED_BYTES } from '../../src/body-memory.js';
import { routerOnRecordingPod } from '../helpers/recording-pod.js';
import { seededBelow } from '../helpers/json-body-fuzz.js';
import { sample } from '../helpers/metrics-text.js';
import { raw, type RawResult } from '../helpers/raw-http.js';

// Request bodies of up to 256 KiB are read into memory used again from one request to the next
// (src/body-memory.ts): from 4 KiB on when announced by a content-length, as their pieces come when
// chunked. Many such requests at once, with uploads cut short and bodies longer
// than their content-length among them, must each reach the pod with exactly the bytes sent.

/** A chat body of about `size` bytes whose text is made of request `i`'s own letter. */
function body(i: number, size: number): string {
  const letter = String.fromCharCode(97 + (i % 26));
  const head = JSON.stringify({ model: 'sf-model', messages: [{ role: 'user', content: `request ${i} ` }] });
  const pad = Math.max(0, size - head.length);
  return head.replace(`request ${i} `, `request ${i} ${letter.repeat(pad)}`);
}

const HEAD = 'POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n';

/** The status line of what the router answered on a raw connection. */
function statusLine(r: RawResult): string {
  return r.text.split('\r\n')[0];
}

/** Sends a head and the first half of a body, then closes: the router's body memory is given back unfinished. */
async function cutUpload(port: number, text: string): Promise<void> {
  await raw(port, [`${HEAD}content-length: ${Buffer.byteLength(text)}\r\n\r\n`, text.slice(0, text.length >> 1)], { waitMs: 5 });
}

/**
 * A body sent chunked, in pieces of 1 byte to 40 KB written 1 ms apart (so that the router reads
 * them one by one): its status line. The body is ASCII, so a piece's characters are its bytes.
 */
async function chunked(port: number, text: string, next: (n: number) => number): Promise<string> {
  const parts = [`${HEAD}transfer-encoding: chunked\r\nconnection: close\r\n\r\n`];
  for (let at = 0; at < text.length;) {
    const n = Math.min(text.length - at, next(4) === 0 ? 1 + next(16) : 1 + next(40_000));
    parts.push(`${n.toString(16)}\r\n${text.slice(at, at + n)}\r\n`);
    at += n;
  }
  parts.push('0\r\n\r\n');
  return statusLine(await raw(port, parts, { gapMs: 1, waitMs: 10_000 }));
}

/** Runs `jobs` in order, `width` at a time. */
async function inTurn(jobs: readonly (() => Promise<void>)[], width: number): Promise<void> {
  let at = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (at < jobs.length) await jobs[at++]();
  }));
}

/** Posts `text` as a chat body; the router answers 200. */
async function post(url: string, text: string): Promise<void> {
  const r = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: text });
  expect(r.status).toBe(200);
  await r.text();
}

/** inference_router_body_memory_free_bytes as the router's /metrics reads now, summed over its workers. */
async function freeBodyMemory(url: string): Promise<{ ordinary: number; shared: number }> {
  const metrics = await (await fetch(`${url}/metrics`)).text();
  return {
    ordinary: sample(metrics, 'inference_router_body_memory_free_bytes{memory="ordinary"}') ?? -1,
    shared: sample(metrics, 'inference_router_body_memory_free_bytes{memory="shared"}') ?? -1,
  };
}

/** A body longer than its content-length: its first content-length bytes are not JSON, answered 400. */
async function overlong(port: number, text: string): Promise<string> {
  return statusLine(await raw(port, [`${HEAD}content-length: ${Buffer.byteLength(text) - 100}\r\n\r\n${text}`], { waitMs: 3000 }));
}

describe.each([
  ['sent on as they come', {}],
  // At most 2 in flight to the pod: the others wait in the fair queue, and their bodies are
  // written turns after they arrived, while other requests' bodies come and go.
  ['waiting in a fair queue first', { ROUTER_FAIRNESS_MAX_CONCURRENT: '2' }],
  // Bodies from 8 KiB on go to a tokenizer thread, in shared memory; those of 4-8 KiB are pooled.
  ['parsed in a tokenizer thread from 8 KiB on', { ROUTER_TOKENIZER_PARSE_MIN_BYTES: '8192' }],
])('request bodies in memory used again (built router, real pod), %s', (_, env: Record<string, string>) => {
  const pod = routerOnRecordingPod({ env });

  it('forwards each of many concurrent bodies of 3-300 KB with its own bytes, chunked uploads, uploads cut short and overlong bodies among them', async () => {
    const port = Number(new URL(pod.router.url).port);
    const next = seededBelow(20261205);
    const sent: string[] = [];
    const overlongLengths: number[] = [];
    const jobs: (() => Promise<void>)[] = [];
    for (let i = 0; i < 240; i++) {
      const text = body(i, i % 20 === 9 ? 300_000 : 3000 + next(120_000));
      if (i % 10 === 3) {
        jobs.push(() => cutUpload(port, text));
        continue;
      }
      if (i % 10 === 7) {
        // Its first content-length bytes are read as its body (and refused as broken JSON).
        overlongLengths.push(Buffer.byteLength(text) - 100);
        jobs.push(async () => expect(await overlong(port, text)).toBe('HTTP/1.1 400 Bad Request'));
        continue;
      }
      sent.push(text);
      if (i % 10 === 5) {
        jobs.push(async () => expect(await chunked(port, text, next)).toBe('HTTP/1.1 200 OK'));
        continue;
      }
      jobs.push(() => post(pod.router.url, text));
    }
    // 24 at a time: bodies of earlier requests are given back while later ones arrive.
    await inTurn(jobs, 24);
    expect(pod.received.length).toBe(sent.length);
    expect([...pod.received].sort()).toEqual([...sent].sort());
    // Most are in the pool's sizes (4-256 KiB), of them some the HTTP/1.1 client copies into its
    // write (up to 16 KiB) and more it writes as they are; some below and above them.
    const sizes = sent.map((t) => Buffer.byteLength(t));
    expect(sizes.filter((n) => n >= 4096 && n <= 16384).length).toBeGreaterThan(5);
    expect(sizes.filter((n) => n > 16384 && n <= 262144).length).toBeGreaterThan(sent.length / 2);
    expect(sizes.some((n) => n < 4096)).toBe(true);
    expect(sizes.some((n) => n > 262144)).toBe(true);
    // Where the tokenizer thread takes bodies from 8 KiB on, it parsed those: the bodies sent
    // whole and the overlong ones' first bytes (an upload cut short never reaches it).
    if (env.ROUTER_TOKENIZER_PARSE_MIN_BYTES === '8192') {
      const metrics = await (await fetch(`${pod.router.url}/metrics`)).text();
      const large = [...sizes, ...overlongLengths].filter((n) => n >= 8192).length;
      expect(sample(metrics, 'inference_router_large_body_parses_total{where="thread"}')).toBe(large);
    }
    // The memory the bodies were read into is free again for the next ones, within its bound per
    // worker (the router runs one per CPU here).
    const free = await freeBodyMemory(pod.router.url);
    expect(free.ordinary).toBeGreaterThan(0);
    expect(free.ordinary).toBeLessThanOrEqual(MAX_FREE_BYTES * availableParallelism());
    if (env.ROUTER_TOKENIZER_PARSE_MIN_BYTES === '8192') expect(free.shared).toBeGreaterThan(0);
  });
});

// Bodies a tokenizer thread parses (256 KiB and more by default), and with no thread the bodies over
// 256 KiB, are read into shared memory used again (up to 16 MiB). A body of megabytes is more than the kernel takes from one write to the pod,
// so its memory stays the socket's until it has gone; only then may another body be read into it.
describe.each([
  ['parsed in a tokenizer thread (the default)', {}],
  // No thread: bodies over 256 KiB lie in the same shared memory, parsed on the event loop.
  ['parsed on the event loop', { ROUTER_TOKENIZER_PARSE_MIN_BYTES: '0' }],
])('request bodies of megabytes in shared memory used again (built router, real pod), %s', (_, env: Record<string, string>) => {
  const pod = routerOnRecordingPod({ env: { ROUTER_MAX_BODY_BYTES: String(8 << 20), ...env } });

  it('forwards each of many concurrent bodies of 0.3-4 MB with its own bytes, chunked uploads and uploads cut short among them', async () => {
    const port = Number(new URL(pod.router.url).port);
    const next = seededBelow(20261206);
    const sent: string[] = [];
    const jobs: (() => Promise<void>)[] = [];
    for (let i = 0; i < 40; i++) {
      const text = body(i, 300_000 + next(3_700_000));
      if (i % 8 === 3) {
        jobs.push(() => cutUpload(port, text));
        continue;
      }
      sent.push(text);
      // Chunked, its memory grows as its pieces come: ordinary up to 256 KiB, then shared.
      if (i % 8 === 5) jobs.push(async () => expect(await chunked(port, text, next)).toBe('HTTP/1.1 200 OK'));
      else jobs.push(() => post(pod.router.url, text));
    }
    await inTurn(jobs, 6);
    expect(pod.received.length).toBe(sent.length);
    expect([...pod.received].sort()).toEqual([...sent].sort());
    const metrics = await (await fetch(`${pod.router.url}/metrics`)).text();
    // No body goes to a thread when they are off: the series is absent.
    expect(sample(metrics, 'inference_router_large_body_parses_total{where="thread"}')).toBe(env.ROUTER_TOKENIZER_PARSE_MIN_BYTES === '0' ? undefined : sent.length);
    // Their shared memory is free again once the pod has had the bytes (bodies of megabytes, more
    // than the kernel takes from one write, are freed by the write's callback), within its bound.
    const free = await freeBodyMemory(pod.router.url);
    expect(free.shared).toBeGreaterThan(0);
    expect(free.shared).toBeLessThanOrEqual(MAX_FREE_SHARED_BYTES * availableParallelism());
  }, 120_000);
});

// With ROUTER_MAX_BODY_BYTES raised past 16 MiB, bodies up to it lie in shared memory used again
// too (its largest buffer the power of two that holds such a body), not in new memory each time.
describe('request bodies over 16 MiB with ROUTER_MAX_BODY_BYTES raised (built router, real pod)', () => {
  const pod = routerOnRecordingPod({ env: { ROUTER_MAX_BODY_BYTES: String(40 << 20) } });

  it('forwards each with its own bytes, and keeps their memory for the next ones', async () => {
    const next = seededBelow(20261207);
    const sent: string[] = [];
    const jobs: (() => Promise<void>)[] = [];
    for (let i = 0; i < 6; i++) {
      const text = body(i, 17_000_000 + next(13_000_000));
      sent.push(text);
      jobs.push(() => post(pod.router.url, text));
    }
    await inTurn(jobs, 2);
    expect(pod.received.length).toBe(sent.length);
    expect([...pod.received].sort()).toEqual([...sent].sort());
    // A 32 MiB buffer at least (bodies of 17-30 MB) is free again: before, such a body's memory was its own, never kept.
    const free = await freeBodyMemory(pod.router.url);
    expect(free.shared).toBeGreaterThanOrEqual(32 << 20);
    expect(free.shared).toBeLessThanOrEqual((64 << 20) * availableParallelism());
  }, 120_000);
});
