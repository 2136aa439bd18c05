import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { AccessRecord } from '../../../src/observe/access-record.js';
import {
  formatJson, formatText, lastLineAscii, MAX_LINE_BYTES, TRUNCATION_MARKER,
} from '../../../src/observe/access-log-format.js';
import { decodeTextValue, parseTextLine } from './text-line-parser.js';

const FIELD_ORDER = [
  'timestamp', 'method', 'path', 'protocol', 'status_code', 'error', 'model_name', 'model_route', 'model_server',
  'selected_pod', 'request_id', 'input_tokens', 'output_tokens', 'duration_total', 'duration_request_processing',
  'duration_upstream_processing', 'duration_response_processing',
];

// 2026-11-22T05:01:02.123Z
const T = Date.UTC(2026, 10, 22, 5, 1, 2, 123);

const ok: AccessRecord = {
  timestamp: T,
  method: 'POST',
  path: '/v1/completions?stream=false&x=1',
  protocol: 'HTTP/1.1',
  status_code: 200,
  error: null,
  model_name: 'llama-3-8b',
  model_route: 'default/llama-route',
  model_server: 'default/llama-server',
  selected_pod: 'llama-server-0',
  request_id: '3f2a1c9e-7b4d-4e8a-9c1f-0d2e3b4a5c6d',
  input_tokens: 12,
  output_tokens: 345,
  duration_total: 2350,
  duration_request_processing: 45,
  duration_upstream_processing: 2180,
  duration_response_processing: 5,
};

const failed: AccessRecord = {
  ...ok,
  timestamp: T + 7,
  status_code: 504,
  error: { type: 'timeout', message: 'inference timed out after 30s' },
  output_tokens: 0,
  duration_total: 30050,
  duration_request_processing: 50,
  duration_upstream_processing: 30000,
  duration_response_processing: 0,
};

/** Characters that must never appear raw in a line: they would split it for some reader. */
const LINE_BREAKERS = /[\x00-\x1f\x7f-\x9f\u2028\u2029]/;

describe('formatJson', () => {
  it('writes prefill_pod after selected_pod, only when set (prefill/decode disaggregation)', () => {
    const pd = { ...ok, selected_pod: 'decode-0', prefill_pod: 'prefill-0' };
    expect(formatJson(pd)).toContain('"selected_pod":"decode-0","prefill_pod":"prefill-0","request_id":');
    expect(formatText(pd)).toContain(' selected_pod=decode-0 prefill_pod=prefill-0 request_id=');
    expect(formatJson({ ...ok, prefill_pod: '' })).toBe(formatJson(ok));
    expect(formatText({ ...ok, prefill_pod: '' })).toBe(formatText(ok));
  });

  it('writes every field in order, no error member on success', () => {
    expect(formatJson(ok)).toBe(
      '{"timestamp":"2026-11-22T05:01:02.123Z","method":"POST","path":"/v1/completions?stream=false&x=1",' +
      '"protocol":"HTTP/1.1","status_code":200,"model_name":"llama-3-8b","model_route":"default/llama-route",' +
      '"model_server":"default/llama-server","selected_pod":"llama-server-0",' +
      '"request_id":"3f2a1c9e-7b4d-4e8a-9c1f-0d2e3b4a5c6d","input_tokens":12,"output_tokens":345,' +
      '"duration_total":2350,"duration_request_processing":45,"duration_upstream_processing":2180,' +
      '"duration_response_processing":5}',
    );
  });

  it('nests error right after status_code on failure', () => {
    const obj = JSON.parse(formatJson(failed));
    expect(Object.keys(obj)).toEqual(FIELD_ORDER);
    expect(obj.error).toEqual({ type: 'timeout', message: 'inference timed out after 30s' });
    expect(obj.timestamp).toBe('2026-11-22T05:01:02.130Z');
    expect(obj.status_code).toBe(504);
  });

  it('keeps empty strings as "" and every field present', () => {
    const r = { ...ok, model_name: '', model_route: '', model_server: '', selected_pod: '' };
    const obj = JSON.parse(formatJson(r));
    expect(Object.keys(obj)).toEqual(FIELD_ORDER.filter((f) => f !== 'error'));
    expect(obj.selected_pod).toBe('');
  });

  it('writes durations, tokens and status as integers', () => {
    const r = { ...ok, duration_total: 12.6, duration_upstream_processing: Number.NaN, input_tokens: 3.2 };
    const obj = JSON.parse(formatJson(r));
    expect(obj.duration_total).toBe(13);
    expect(obj.duration_upstream_processing).toBe(0);
    expect(obj.input_tokens).toBe(3);
  });

  it('escapes quotes, backslashes, control characters, C1 controls and U+2028/U+2029', () => {
    const hostile = 'a"b\\c\nd\re\u0000f\u007fg\u0085h\u2028i\u2029j';
    const line = formatJson({ ...ok, path: hostile, model_name: hostile });
    expect(line).not.toMatch(LINE_BREAKERS);
    expect(line).toContain('"path":"a\\"b\\\\c\\nd\\re\\u0000f\\u007fg\\u0085h\\u2028i\\u2029j"');
    const obj = JSON.parse(line);
    expect(obj.path).toBe(hostile);
    expect(obj.model_name).toBe(hostile);
  });

  it('a hostile model name cannot add or override a field', () => {
    const line = formatJson({ ...ok, model_name: 'x","status_code":500,"request_id":"forged' });
    const obj = JSON.parse(line);
    expect(obj.status_code).toBe(200);
    expect(obj.request_id).toBe(ok.request_id);
    expect(Object.keys(obj)).toEqual(FIELD_ORDER.filter((f) => f !== 'error'));
  });
});

describe('formatText', () => {
  it('writes the documented layout on success', () => {
    expect(formatText(ok)).toBe(
      '[2026-11-22T05:01:02.123Z] "POST /v1/completions?stream=false&x=1 HTTP/1.1" 200 model_name=llama-3-8b ' +
      'model_route=default/llama-route model_server=default/llama-server selected_pod=llama-server-0 ' +
      'request_id=3f2a1c9e-7b4d-4e8a-9c1f-0d2e3b4a5c6d tokens=12/345 timings=2350ms(45+2180+5)',
    );
  });

  it('puts error=<type>:<message> right after the status code on failure, spaces escaped', () => {
    expect(formatText(failed)).toBe(
      '[2026-11-22T05:01:02.130Z] "POST /v1/completions?stream=false&x=1 HTTP/1.1" 504 ' +
      'error=timeout:inference\\x20timed\\x20out\\x20after\\x2030s model_name=llama-3-8b ' +
      'model_route=default/llama-route model_server=default/llama-server selected_pod=llama-server-0 ' +
      'request_id=3f2a1c9e-7b4d-4e8a-9c1f-0d2e3b4a5c6d tokens=12/0 timings=30050ms(50+30000+0)',
    );
  });

  it('writes empty values as - and a literal - as \\x2d', () => {
    const line = formatText({ ...ok, model_name: '-', model_route: '', model_server: '', selected_pod: '', request_id: '' });
    expect(line).toContain(' model_name=\\x2d model_route=- model_server=- selected_pod=- request_id=- ');
    const parsed = parseTextLine(line);
    expect(parsed.fields.model_name).toBe('-');
    expect(parsed.fields.model_route).toBe('');
  });

  it('escapes spaces, quotes, backslashes and control characters; non-ASCII stays', () => {
    const line = formatText({ ...ok, model_name: 'llama 3 "big"\\v2\tÆ中😀', path: '/a b' });
    expect(line).toContain('model_name=llama\\x203\\x20\\x22big\\x22\\x5cv2\\x09Æ中😀 ');
    expect(line).toContain('"POST /a\\x20b HTTP/1.1"');
  });

  it('a hostile path or model name cannot produce a second line or a fake field', () => {
    const path = '/v1/completions?q=1 HTTP/1.1" 200 model_name=forged\n[2026-01-01T00:00:00.000Z] "GET / HTTP/1.1" 200';
    const model = 'x request_id=forged\r\u2028 tokens=9/9';
    const line = formatText({ ...failed, path, model_name: model, error: { type: 'timeout', message: 'a\nb model_route=x' } });
    expect(line).not.toMatch(LINE_BREAKERS);
    expect(line.split(' ')).toHaveLength(13);
    expect(line.match(/ request_id=/g)).toHaveLength(1);
    expect(line.match(/ model_name=/g)).toHaveLength(1);
    const parsed = parseTextLine(line);
    expect(parsed.path).toBe(path);
    expect(parsed.fields.model_name).toBe(model);
    expect(parsed.fields.request_id).toBe(ok.request_id);
    expect(parsed.error).toEqual({ type: 'timeout', message: 'a\nb model_route=x' });
  });
});

describe('both formats', () => {
  const alphabet = [' ', '"', '\\', '\n', '\r', '\t', '\u0000', '\u001b', '\u007f', '\u0085', '\u2028', '\u2029',
    '=', ':', '-', '[', ']', '{', '}', 'a', 'Z', '/', '?', 'é', '中', '😀', 'x20', '\\x20', '%'];
  let seed = 42;
  const rand = (n: number): number => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % n;
  };
  const randomString = (): string => {
    let s = '';
    const n = rand(12);
    for (let i = 0; i < n; i++) s += alphabet[rand(alphabet.length)];
    return s;
  };

  it('round-trip any value exactly, on one line', () => {
    for (let i = 0; i < 3000; i++) {
      const r: AccessRecord = {
        ...ok,
        method: randomString(), path: randomString(), protocol: randomString(),
        error: rand(2) === 0 ? null : { type: randomString(), message: randomString() },
        model_name: randomString(), model_route: randomString(), model_server: randomString(),
        selected_pod: randomString(), request_id: randomString(),
      };
      const json = formatJson(r);
      expect(json).not.toMatch(LINE_BREAKERS);
      const obj = JSON.parse(json);
      expect(obj.path).toBe(r.path);
      expect(obj.model_name).toBe(r.model_name);
      expect(obj.error).toEqual(r.error ?? undefined);

      const text = formatText(r);
      expect(text).not.toMatch(LINE_BREAKERS);
      const parsed = parseTextLine(text);
      expect([parsed.method, parsed.path, parsed.protocol]).toEqual([r.method, r.path, r.protocol]);
      expect(parsed.error).toEqual(r.error);
      for (const f of ['model_name', 'model_route', 'model_server', 'selected_pod', 'request_id'] as const) {
        expect(parsed.fields[f]).toBe(r[f]);
      }
    }
  });

  it('a value that repeats, returns or changes is written as itself (fields keep their last escaped value)', () => {
    const values = ['default/route-a', 'default/route "b"', 'default/route-a', '', 'a\nb', 'a\nb', ''];
    for (let i = 0; i < values.length * 3; i++) {
      const v = values[i % values.length];
      const w = values[(i * 5) % values.length];
      const r: AccessRecord = { ...ok, method: w, path: v, model_name: v, model_route: w, model_server: v, selected_pod: w };
      const obj = JSON.parse(formatJson(r));
      expect([obj.method, obj.path, obj.model_name, obj.model_route, obj.model_server, obj.selected_pod]).toEqual([w, v, v, w, v, w]);
      const t = parseTextLine(formatText(r));
      expect([t.method, t.path, t.fields.model_name, t.fields.model_route, t.fields.model_server, t.fields.selected_pod]).toEqual([w, v, v, w, v, w]);
    }
  });

  it('decodes escapes the documented way', () => {
    expect(decodeTextValue('a\\x20b\\x5c\\u2028')).toBe('a b\\\u2028');
    expect(decodeTextValue('-')).toBe('');
  });
});

describe('records longer than 4 KiB', () => {
  const bytes = (s: string): number => Buffer.byteLength(s);

  it.each([
    ['json', formatJson],
    ['text', formatText],
  ] as const)('%s: a long path is shortened with a marker; one valid line of at most 4095 bytes', (name, format) => {
    const path = '/v1/completions?q=' + 'x'.repeat(10_000);
    const line = format({ ...ok, path });
    expect(bytes(line)).toBeLessThanOrEqual(MAX_LINE_BYTES);
    expect(bytes(line)).toBeGreaterThan(MAX_LINE_BYTES - 64);
    const got = name === 'json' ? JSON.parse(line).path : parseTextLine(line).path;
    expect(got.endsWith(TRUNCATION_MARKER)).toBe(true);
    expect(path.startsWith(got.slice(0, -TRUNCATION_MARKER.length))).toBe(true);
    // The other fields are untouched.
    const id = name === 'json' ? JSON.parse(line).request_id : parseTextLine(line).fields.request_id;
    expect(id).toBe(ok.request_id);
  });

  it.each([
    ['json', formatJson],
    ['text', formatText],
  ] as const)('%s: multi-byte and escape-heavy values in several fields still fit', (name, format) => {
    const r: AccessRecord = {
      ...failed,
      path: '/p?' + '\u0000'.repeat(3000),
      model_name: '中'.repeat(2000),
      error: { type: 'upstream_error', message: '😀 '.repeat(1500) },
    };
    const line = format(r);
    expect(bytes(line)).toBeLessThanOrEqual(MAX_LINE_BYTES);
    expect(line).not.toMatch(LINE_BREAKERS);
    expect(line).not.toMatch(/\uFFFD/);
    if (name === 'json') {
      const obj = JSON.parse(line);
      expect(Object.keys(obj)).toEqual(FIELD_ORDER);
      expect(obj.error.type).toBe('upstream_error');
      // Surrogate pairs are never split by the cut.
      expect(obj.error.message).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/);
    } else {
      const parsed = parseTextLine(line);
      expect(parsed.error?.type).toBe('upstream_error');
      expect(parsed.fields.request_id).toBe(ok.request_id);
    }
  });

  it.each([
    ['json', formatJson],
    ['text', formatText],
  ] as const)('%s: values of multi-byte characters are cut no more than the line needs', (_name, format) => {
    for (const ch of ['😀', '中', 'é']) {
      const model = ch.repeat(3000);
      const line = format({ ...failed, model_name: model, error: { type: 'model_not_found', message: `model "${model}" is not served by any route` } });
      expect(bytes(line)).toBeLessThanOrEqual(MAX_LINE_BYTES);
      // At most one character (and the cut's rounding) short of the bound, and the model name kept in part.
      expect(bytes(line)).toBeGreaterThan(MAX_LINE_BYTES - 8);
      expect(line).toContain(ch.repeat(100));
    }
  });

  it('short records are not touched', () => {
    expect(formatJson(ok)).not.toContain(TRUNCATION_MARKER);
    expect(formatText(ok)).not.toContain(TRUNCATION_MARKER);
  });
});

describe('docs/access-log.md examples', () => {
  const doc = readFileSync(new URL('../../../docs/access-log.md', import.meta.url), 'utf8');
  const jsonLines = doc.split('\n').filter((l) => l.startsWith('{"timestamp"'));
  const textLines = doc.split('\n').filter((l) => /^\[\d{4}-/.test(l));

  it('has examples of both formats', () => {
    expect(jsonLines.length).toBeGreaterThanOrEqual(2);
    expect(textLines.length).toBeGreaterThanOrEqual(3);
  });

  it('JSON examples are exactly what formatJson writes', () => {
    for (const line of jsonLines) {
      const o = JSON.parse(line);
      const r: AccessRecord = { ...o, timestamp: Date.parse(o.timestamp), error: o.error ?? null };
      expect(formatJson(r)).toBe(line);
    }
  });

  it('text examples are exactly what formatText writes', () => {
    for (const line of textLines) {
      const p = parseTextLine(line);
      const [input, output] = p.tokens.split('/').map(Number);
      const [total, req, up, resp] = p.timings.match(/\d+/g)!.map(Number);
      const r: AccessRecord = {
        timestamp: Date.parse(p.timestamp), method: p.method, path: p.path, protocol: p.protocol,
        status_code: p.status, error: p.error,
        model_name: p.fields.model_name!, model_route: p.fields.model_route!, model_server: p.fields.model_server!,
        selected_pod: p.fields.selected_pod!, request_id: p.fields.request_id!,
        input_tokens: input!, output_tokens: output!, duration_total: total!, duration_request_processing: req!,
        duration_upstream_processing: up!, duration_response_processing: resp!,
      };
      expect(formatText(r)).toBe(line);
    }
  });
});

describe('lastLineAscii: whether the line just formatted is all ASCII (the writer then copies it without encoding)', () => {
  for (const [name, format] of [['json', formatJson], ['text', formatText]] as const) {
    it(`${name}: true for an all-ASCII record, false with a non-ASCII value, an error, or a truncated line`, () => {
      const check = (r: AccessRecord): boolean => {
        const line = format(r);
        const ascii = lastLineAscii();
        if (ascii) expect(/^[\x00-\x7f]*$/.test(line)).toBe(true);
        return ascii;
      };
      expect(check(ok)).toBe(true);
      expect(check(ok)).toBe(true); // the repeated values, from memory
      expect(check({ ...ok, model_name: 'modèle' })).toBe(false);
      expect(check(ok)).toBe(true);
      expect(check({ ...ok, selected_pod: 'pod-\u2028' })).toBe(true); // written escaped, in ASCII
      expect(check({ ...ok, selected_pod: 'pod-ß' })).toBe(false);
      expect(check({ ...ok, request_id: 'id-ü' })).toBe(false);
      expect(check(failed)).toBe(false);
      expect(check({ ...ok, path: '/v1/completions?q=' + 'x'.repeat(5000) })).toBe(false);
      expect(check(ok)).toBe(true);
    });
  }
});
