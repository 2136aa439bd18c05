import { Buffer } from 'node:buffer';
import { describe, expect, it } from 'vitest';
import { SseUsageScanner } from '../../../src/api/openai-sse-usage.js';
import { HOLD_BYTES, SseMemberStreamCut } from '../../../src/api/sse-member-stream-cut.js';
import { GeneratedTextRecorder } from '../../helpers/generated-text-recorder.js';
import { mulberry32 } from '../../helpers/mulberry32.js';

const USAGE = Buffer.from('usage');

const KEYS = ['id', 'usage', 'choices', 'x_usage', 'usages', '\\u0075sage', 'us\\u0061ge', 'a', 'é'];
/** The KEYS a parser reads as `usage`. */
const USAGE_KEYS = new Set(['usage', '\\u0075sage', 'us\\u0061ge']);
const STRINGS = ['', 'x', '\\"usage\\":{\\"a\\":1}', '}]', ',', '\\"', '\\\\', 'é😀', '{\\"usage\\":', 'data: x', '\\u0022'];
const LITERALS = ['0', '-1.5e3', 'true', 'false', 'null', '12345678901234567890'];

interface Gen { r: () => number; pick<T>(a: readonly T[]): T; }

/** JSON tokens of a value; '~' stands for the white space that may come between tokens. */
function value(g: Gen, depth: number): string[] {
  const k = g.r();
  if (depth < 3 && k < 0.2) {
    const n = Math.floor(g.r() * 3);
    const t: string[] = ['{'];
    for (let i = 0; i < n; i++) {
      if (i !== 0) t.push('~', ',');
      t.push('~', `"${g.pick(KEYS)}"`, '~', ':', '~', ...value(g, depth + 1));
    }
    t.push('~', '}');
    return t;
  }
  if (depth < 3 && k < 0.35) {
    const n = Math.floor(g.r() * 3);
    const t: string[] = ['['];
    for (let i = 0; i < n; i++) {
      if (i !== 0) t.push('~', ',');
      t.push('~', ...value(g, depth + 1));
    }
    t.push('~', ']');
    return t;
  }
  if (k < 0.7) return [`"${g.pick(STRINGS)}"`];
  return [g.pick(LITERALS)];
}

/** Events made by `event` whose top-level usage members are all null (or that have none). */
const nullUsage = new Set<string>();

/**
 * A random event whose data is one JSON object, over one or more data lines, with other lines
 * between; now and then more than HOLD_BYTES of white space or lines where white space may stand.
 */
function event(g: Gen): string {
  const t: string[] = ['~', '{'];
  const n = Math.floor(g.r() * 5);
  let allNull = true;
  for (let i = 0; i < n; i++) {
    if (i !== 0) t.push('~', ',');
    const key = g.pick(KEYS);
    const v = value(g, 0);
    if (USAGE_KEYS.has(key) && (v.length !== 1 || v[0] !== 'null')) allNull = false;
    t.push('~', `"${key}"`, '~', ':', '~', ...v);
  }
  t.push('~', '}', '~');
  const eol = g.pick(['\n', '\r\n', '\r']);
  const prefix = (): string => g.pick(['data: ', 'data:', 'data:  ']);
  let s = (g.r() < 0.3 ? `event: e${eol}` : '') + (g.r() < 0.2 ? `: c${eol}` : '') + prefix();
  for (const tok of t) {
    if (tok !== '~') {
      s += tok;
      continue;
    }
    const w = g.r();
    if (w < 0.55) continue;
    if (w < 0.8) s += g.pick([' ', '\t', '  ', ' \t ']);
    else if (w < 0.995) s += eol + (g.r() < 0.3 ? g.pick([`: note${eol}`, `id: 3${eol}`, `data${eol}`, `data:${eol}`]) : '') + prefix();
    else s += g.pick([' '.repeat(HOLD_BYTES + 1), `${eol}data:`.repeat(HOLD_BYTES / 4), `${eol}: ${'c'.repeat(HOLD_BYTES)}${eol}data:`]);
  }
  s += eol + (g.r() < 0.2 ? `retry: 5${eol}` : '') + eol;
  if (allNull) nullUsage.add(s);
  return s;
}

/** The data and other lines of an event as an SSE client reads them. */
function read(ev: string): { data: string; others: string[] } {
  const lines = ev.split(/\r\n|\r|\n/);
  const data: string[] = [];
  const others: string[] = [];
  for (const l of lines) {
    const m = /^data(?::(.*))?$/s.exec(l);
    if (m === null) {
      if (l !== '') others.push(l);
    }
    else data.push((m[1] ?? '').replace(/^ /, ''));
  }
  return { data: data.join('\n'), others };
}

/** A value's top level, as the cut keeps it: its strings and nested objects and arrays emptied. */
function topLevel(v: unknown): unknown {
  const empty = (x: unknown): unknown => typeof x === 'string' ? '' : Array.isArray(x) ? [] : typeof x === 'object' && x !== null ? {} : x;
  if (Array.isArray(v)) return v.map(empty);
  if (typeof v === 'object' && v !== null) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, empty(x)]));
  return empty(v);
}

function streamed(ev: Buffer, cuts: number[]): { out: string; value: string | null } {
  const cut = new SseMemberStreamCut(USAGE);
  const out: Buffer[] = [];
  let from = 0;
  for (const at of [...cuts, ev.length]) {
    const piece = Buffer.from(ev.subarray(from, at));
    const start = out.length;
    cut.push(piece, out);
    for (let i = start; i < out.length; i++) out[i] = Buffer.from(out[i]);
    piece.fill(0x21);
    from = at;
  }
  cut.end(out);
  return { out: Buffer.concat(out).toString(), value: cut.value === null ? null : cut.value.toString() };
}

describe('SseMemberStreamCut, random events split at random', () => {
  it('leaves the JSON without its top-level usage members and every other line as it came', () => {
    const r = mulberry32(20261202);
    const g: Gen = { r, pick: (a) => a[Math.floor(r() * a.length)] };
    for (let n = 0; n < 2000; n++) {
      const text = event(g);
      const bytes = Buffer.from(text);
      const input = read(text);
      let parsed: Record<string, unknown>;
      try { parsed = JSON.parse(input.data) as Record<string, unknown>; } catch { throw new Error(`bad input ${JSON.stringify(text)} ${JSON.stringify(input.data)}`); }
      let last: unknown = undefined;
      for (const [k, v] of Object.entries(parsed)) if (k === 'usage') last = v;
      delete parsed.usage;
      const splits: number[][] = [[], Array.from({ length: bytes.length }, (_, i) => i)];
      for (let s = 0; s < 4; s++) {
        const cuts: number[] = [];
        for (let at = 0; at < bytes.length; at += 1 + Math.floor(r() * 12)) if (at > 0) cuts.push(at);
        splits.push(cuts);
      }
      let first: string | null = null;
      for (const cuts of splits) {
        const { out, value } = streamed(bytes, cuts);
        const what = `${JSON.stringify(text)} -> ${JSON.stringify(out)} (${cuts.length} cuts)`;
        const got = read(out);
        expect(got.others, what).toEqual(input.others);
        let reparsed: unknown;
        try {
          reparsed = JSON.parse(got.data);
        } catch {
          throw new Error(`not JSON: ${what}`);
        }
        expect(reparsed, what).toEqual(parsed);
        if (last !== undefined) expect(value === null ? undefined : JSON.parse(value), what).toEqual(topLevel(last));
        if (first === null) first = out;
        else expect(out, what).toBe(first);
      }
    }
  });
});

/** The events of a stream as an SSE client reads them: each one's data and other lines. */
function readStream(text: string): { data: string; others: string[] }[] {
  const events: { data: string; others: string[] }[] = [];
  let cur: string[] = [];
  for (const l of text.split(/\r\n|\r|\n/)) {
    if (l === '') {
      if (cur.length !== 0) events.push(read(cur.join('\n')));
      cur = [];
    } else cur.push(l);
  }
  if (cur.length !== 0) events.push(read(cur.join('\n')));
  return events;
}

/** The members of a chunk besides its content (openai-event-usage.ts). */
const IDENTITY = new Set(['id', 'object', 'created', 'model', 'system_fingerprint', 'service_tier', 'choices', 'usage']);

describe('SseUsageScanner in strip mode, random events around the bound, split at random', () => {
  it('forwards every event without its usage members (an object, or null beside a set one), every other line as it came', () => {
    const r = mulberry32(7);
    const g: Gen = { r, pick: (a) => a[Math.floor(r() * a.length)] };
    for (let n = 0; n < 3000; n++) {
      const texts: string[] = [];
      for (let e = 1 + Math.floor(r() * 4); e > 0; ) {
        const text = event(g);
        const parsed = JSON.parse(read(text).data) as { choices?: unknown; usage?: unknown };
        const choices = parsed.choices;
        if (Array.isArray(choices) && choices.length === 0) continue; // the usage chunk: removed whole
        // Its other shape, a usage object beside nothing but the chunk's identity (choices null or
        // left out): removed whole too within the bound (sse-usage.test.ts), cut past it.
        const usageObject = typeof parsed.usage === 'object' && parsed.usage !== null && !Array.isArray(parsed.usage);
        if (usageObject && (choices === undefined || choices === null) && Object.keys(parsed).every((k) => IDENTITY.has(k))) continue;
        texts.push(text);
        e--;
      }
      const stream = Buffer.from(texts.join(''));
      const max = 8 + Math.floor(r() * 200);
      // Every other stream as the router reads it: with its text counted (events parsed only when they may carry usage).
      const scanner = new SseUsageScanner({ stripUsageChunk: true, maxEventBytes: max }, n % 2 === 0 ? null : new GeneratedTextRecorder());
      const out: Buffer[] = [];
      let from = 0;
      while (from < stream.length) {
        const to = Math.min(stream.length, from + 1 + Math.floor(r() * 40));
        const piece = Buffer.from(stream.subarray(from, to));
        out.push(Buffer.from(scanner.push(piece)));
        piece.fill(0x21);
        from = to;
      }
      out.push(Buffer.from(scanner.end()));
      const got = readStream(Buffer.concat(out).toString());
      const want = texts.map(read);
      const what = `max ${max}: ${JSON.stringify(texts.join(''))} -> ${JSON.stringify(Buffer.concat(out).toString())}`;
      expect(got.length, what).toBe(want.length);
      for (let i = 0; i < want.length; i++) {
        expect(got[i].others, what).toEqual(want[i].others);
        const input = JSON.parse(want[i].data) as Record<string, unknown>;
        let output: unknown;
        try {
          output = JSON.parse(got[i].data);
        } catch {
          throw new Error(`not JSON: ${what}`);
        }
        // Within the bound, usage members that are all null are left (past it they are cut too).
        const asIs = JSON.parse(want[i].data) as unknown;
        delete input.usage;
        if (nullUsage.has(texts[i]) && JSON.stringify(output) === JSON.stringify(asIs)) continue;
        expect(output, what).toEqual(input);
      }
    }
  });
});
