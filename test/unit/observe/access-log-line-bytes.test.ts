import { describe, expect, it } from 'vitest';
import type { AccessRecord } from '../../../src/observe/access-record.js';
import { formatJson, formatText, MAX_LINE_BYTES } from '../../../src/observe/access-log-format.js';
import { jsonGroupsHeld, writeJsonRecord, writeTextRecord } from '../../../src/observe/access-log-line-bytes.js';
import { GROUP_LIMIT } from '../../../src/observe/group-bytes.js';
import { RecordBatcher } from '../../../src/observe/access-log-batch.js';
import { makeRecord } from './fixtures/records.mjs';

const T = Date.UTC(2026, 10, 22, 5, 1, 2, 123);

/** A usual record (no error, plain values) of the writer tests' fixtures, at time T. */
const ok: AccessRecord = { ...makeRecord(3, 1), timestamp: T };

type Writer = (r: AccessRecord, buf: Buffer, at: number) => number;

/** The bytes `write` writes for `r` at an offset, or null when it declines. */
function written(r: AccessRecord, at = 7, write: Writer = writeJsonRecord): Buffer | null {
  const buf = Buffer.alloc(at + MAX_LINE_BYTES + 1, 0xee);
  const end = write(r, buf, at);
  if (end < 0) return null;
  expect(end - at).toBeLessThanOrEqual(MAX_LINE_BYTES);
  expect(buf[end]).toBe(0xee); // nothing past the end
  return buf.subarray(at, end);
}

/** A small deterministic generator (tests must repeat). */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const STRINGS = ['', '-', 'a', '/v1/chat/completions', 'ünïcode-模型', 'quote"back\\slash', 'tab\there', 'del\u007f', 'c1\u0085', 'ls\u2028ps\u2029',
  'emoji-😀', 'x'.repeat(300), '\u0000nul', 'HTTP/1.1', 'GET', 'pod-a', 'pod-b', 'ns/route'];
const NUMBERS = [0, 1, 9, 10, 99, 100, 999, 1000, 123456789, 1e9, 4294967295, Number.MAX_SAFE_INTEGER, 2 ** 60, 1e21, -1, -0, 1.5, 2.5, -2.5,
  Number.NaN, Infinity, -Infinity, 0.4999, 1e-7];
const TIMES = [T, 0, -1, -1001, 999, 1000, 86_400_000 - 1, 8.64e15, -8.64e15, 8.64e15 + 1, Number.NaN, 253402300800000, T + 0.9];

describe('JSON access-log records written as bytes', () => {
  it('writes the bytes formatJson makes, for the usual record and across seconds', () => {
    for (const r of [ok, { ...ok, timestamp: T + 1000 }, { ...ok, timestamp: T + 1 }, { ...ok, timestamp: T + 877 }, ok]) {
      expect(written(r)!.toString('utf8')).toBe(formatJson(r));
    }
  });

  it.each([
    ['json', writeJsonRecord, formatJson],
    ['text', writeTextRecord, formatText],
  ] as const)('%s: matches the string formatter byte for byte over varied strings, numbers and times, or declines', (_name, write, format) => {
    const next = rng(20261126);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)];
    let wrote = 0;
    for (let i = 0; i < 5000; i++) {
      const r: AccessRecord = {
        timestamp: pick(TIMES), method: pick(STRINGS), path: pick(STRINGS), protocol: pick(STRINGS), status_code: pick(NUMBERS),
        error: null, model_name: pick(STRINGS), model_route: pick(STRINGS), model_server: pick(STRINGS), selected_pod: pick(STRINGS),
        // Written only when set (prefill/decode disaggregation).
        prefill_pod: next() < 0.5 ? undefined : pick(STRINGS),
        request_id: next() < 0.8 ? ok.request_id : pick(STRINGS),
        input_tokens: pick(NUMBERS), output_tokens: pick(NUMBERS), duration_total: pick(NUMBERS),
        duration_request_processing: pick(NUMBERS), duration_upstream_processing: pick(NUMBERS), duration_response_processing: pick(NUMBERS),
      };
      const b = written(r, Math.floor(next() * 100), write);
      if (b === null) continue;
      wrote++;
      expect(b.equals(Buffer.from(format(r), 'utf8')), JSON.stringify(r)).toBe(true);
    }
    expect(wrote).toBeGreaterThan(3000);
  });

  it('text: writes the bytes formatText makes for the usual record, and declines what it must write', () => {
    for (const r of [ok, { ...ok, timestamp: T + 1000 }, { ...ok, selected_pod: 'pod b' }, ok]) {
      expect(written(r, 3, writeTextRecord)!.toString('utf8')).toBe(formatText(r));
    }
    for (const id of ['', '-', 'a b', 'a"b', 'ü']) expect(written({ ...ok, request_id: id }, 3, writeTextRecord)).toBeNull();
    expect(written({ ...ok, error: { type: 'rate_limit', message: 'x' } }, 3, writeTextRecord)).toBeNull();
    expect(written({ ...ok, path: '/'.repeat(MAX_LINE_BYTES) }, 3, writeTextRecord)).toBeNull();
  });

  it('declines what formatJson must write: an error, a request id that needs escaping, a line that may be too long', () => {
    expect(written({ ...ok, error: { type: 'rate_limit', message: 'x' } })).toBeNull();
    expect(written({ ...ok, request_id: 'a"b' })).toBeNull();
    expect(written({ ...ok, request_id: 'ü' })).toBeNull();
    expect(written({ ...ok, path: '/'.repeat(MAX_LINE_BYTES) })).toBeNull();
    expect(written({ ...ok, path: '/'.repeat(1400), model_name: 'm'.repeat(1400), selected_pod: 'p'.repeat(1400) })).toBeNull();
    const three = { ...ok, path: '/'.repeat(1000), model_name: 'm'.repeat(1000), selected_pod: 'p'.repeat(1000) };
    expect(written(three)!.toString()).toBe(formatJson(three));
    // Long, but certain to fit: written.
    expect(written({ ...ok, path: '/'.repeat(2000) })!.toString()).toBe(formatJson({ ...ok, path: '/'.repeat(2000) }));
  });

  it('a request id the router made is written without its check, the same bytes in both formats; a client\'s id is still checked', async () => {
    const { newRequestId } = await import('../../../src/http/request-id.js');
    for (let i = 0; i < 300; i++) {
      const made: AccessRecord = { ...ok, request_id: newRequestId(), request_id_made: true };
      expect(written(made)!.toString('utf8')).toBe(formatJson(made));
      expect(written(made, 5, writeTextRecord)!.toString('utf8')).toBe(formatText(made));
    }
    // Only the router's own ids skip the check: the same id from a client goes through it.
    for (const id of ['a"b', 'a\\b', 'ü']) expect(written({ ...ok, request_id: id, request_id_made: false })).toBeNull();
    for (const id of ['-', 'a"b']) expect(written({ ...ok, request_id: id, request_id_made: false }, 3, writeTextRecord)).toBeNull();
  });

  it('more pods, models and paths than the kept bytes hold: each record still the bytes of the string formatters', () => {
    const n = 2 * GROUP_LIMIT + 7;
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < n; i++) {
        // Pods and models cycle at different lengths; paths share their first value less often.
        const r: AccessRecord = { ...ok, selected_pod: `pod-${i % 300}`, model_name: `model-${i % 37}`, model_route: `ns/route-${i % 37}`,
          path: `/v1/completions?i=${i % 1500}`, method: i % 2 === 0 ? 'POST' : 'GET', status_code: 200 + (i % 3) };
        expect(written(r)!.toString('utf8')).toBe(formatJson(r));
        expect(written(r, 1, writeTextRecord)!.toString('utf8')).toBe(formatText(r));
        expect(jsonGroupsHeld()).toBeLessThanOrEqual(GROUP_LIMIT);
      }
    }
    expect(jsonGroupsHeld()).toBeGreaterThan(0);
  });

  it('the batcher takes a written record as a line, and takes nothing when the writer declines', () => {
    const batches: string[] = [];
    const b = new RecordBatcher(8192, (batch) => batches.push(batch.toString()));
    expect(b.addWritten(ok, writeJsonRecord)).toBe(true);
    expect(b.addWritten({ ...ok, error: { type: 't', message: 'm' } }, writeJsonRecord)).toBe(false);
    b.add('plain line', true);
    expect(b.pending).toBe(2);
    b.flush();
    expect(batches).toEqual([`${formatJson(ok)}\nplain line\n`]);
  });

  it('a written record that does not fit the batch starts the next one, whole', () => {
    const batches: Buffer[] = [];
    const b = new RecordBatcher(4096, (batch) => batches.push(batch));
    const line = formatJson(ok);
    const fit = Math.floor(4096 / (line.length + 1));
    for (let i = 0; i < fit + 1; i++) expect(b.addWritten(ok, writeJsonRecord)).toBe(true);
    b.flush();
    expect(batches.map((x) => x.length)).toEqual([fit * (line.length + 1), line.length + 1]);
    expect(Buffer.concat(batches).toString()).toBe(`${line}\n`.repeat(fit + 1));
  });
});
