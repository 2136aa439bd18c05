import type { AccessRecord } from './access-record.js';
import { jsonString, LastEscaped, textErrorType, textValue } from './access-log-escape.js';
import { isAscii } from '../ascii-text.js';
import { isoTimestamp } from './access-log-timestamp.js';
import { Buffer } from 'node:buffer';
import { PIPE_BUF } from './pipe-buf.js';

/**
 * The two access-log formats (docs/access-log.md). Each returns one line without the trailing
 * newline, never longer than MAX_LINE_BYTES UTF-8 bytes: longer records have their longest
 * string values shortened and marked with TRUNCATION_MARKER (see `fitLine`).
 */

/** A record plus its newline never exceeds this many bytes. */
export const MAX_RECORD_BYTES = PIPE_BUF;
/** Longest line a formatter returns (the newline is added by the writer). */
export const MAX_LINE_BYTES = MAX_RECORD_BYTES - 1;
/** Appended to a value that was shortened to keep its record within MAX_RECORD_BYTES. */
export const TRUNCATION_MARKER = '...[truncated]';

/** Integers only: durations, tokens and status are rounded; non-finite numbers become 0. */
export function int(n: number): number {
  return Number.isInteger(n) ? n : Number.isFinite(n) ? Math.round(n) : 0;
}

// Fields whose values repeat between records keep their last escaped form (the request id does not repeat).
const J = {
  method: new LastEscaped(jsonString), path: new LastEscaped(jsonString), protocol: new LastEscaped(jsonString),
  model_name: new LastEscaped(jsonString), model_route: new LastEscaped(jsonString),
  model_server: new LastEscaped(jsonString), selected_pod: new LastEscaped(jsonString),
};
const T = {
  method: new LastEscaped(textValue), path: new LastEscaped(textValue), protocol: new LastEscaped(textValue),
  model_name: new LastEscaped(textValue), model_route: new LastEscaped(textValue),
  model_server: new LastEscaped(textValue), selected_pod: new LastEscaped(textValue),
};

/**
 * Whether the line the last formatJson/formatText call returned is all ASCII: its UTF-8 bytes are
 * then its characters, one each, which the writer copies faster than it encodes (a record without
 * an error, whose repeated values were checked when they first came, and whose request id is ASCII).
 */
let lastAscii = false;

export function lastLineAscii(): boolean {
  return lastAscii;
}

/** Whether `r`, just written as a line with the escapers `f`, made an all-ASCII line. */
function allAscii(f: typeof J, r: AccessRecord): boolean {
  return r.error === null && f.method.ascii && f.path.ascii && f.protocol.ascii && f.model_name.ascii && f.model_route.ascii
    && f.model_server.ascii && f.selected_pod.ascii && isAscii(r.request_id) && (!r.prefill_pod || isAscii(r.prefill_pod));
}

/** The line of `r` by `lineOf` (escaping with `f`), shortened when too long; sets lastAscii. */
function formatWith(r: AccessRecord, lineOf: (r: AccessRecord) => string, f: typeof J): string {
  const line = lineOf(r);
  if (fits(line)) {
    lastAscii = allAscii(f, r);
    return line;
  }
  lastAscii = false;
  return fitLine(r, lineOf);
}

function jsonLine(r: AccessRecord): string {
  const e = r.error;
  return '{"timestamp":"' + isoTimestamp(r.timestamp) +
    '","method":' + J.method.of(r.method) +
    ',"path":' + J.path.of(r.path) +
    ',"protocol":' + J.protocol.of(r.protocol) +
    ',"status_code":' + int(r.status_code) +
    (e === null ? '' : ',"error":{"type":' + jsonString(e.type) + ',"message":' + jsonString(e.message) + '}') +
    ',"model_name":' + J.model_name.of(r.model_name) +
    ',"model_route":' + J.model_route.of(r.model_route) +
    ',"model_server":' + J.model_server.of(r.model_server) +
    ',"selected_pod":' + J.selected_pod.of(r.selected_pod) +
    (r.prefill_pod ? ',"prefill_pod":' + jsonString(r.prefill_pod) : '') +
    ',"request_id":' + jsonString(r.request_id) +
    ',"input_tokens":' + int(r.input_tokens) +
    ',"output_tokens":' + int(r.output_tokens) +
    ',"duration_total":' + int(r.duration_total) +
    ',"duration_request_processing":' + int(r.duration_request_processing) +
    ',"duration_upstream_processing":' + int(r.duration_upstream_processing) +
    ',"duration_response_processing":' + int(r.duration_response_processing) +
    '}';
}

function textLine(r: AccessRecord): string {
  const e = r.error;
  return '[' + isoTimestamp(r.timestamp) + '] "' +
    T.method.of(r.method) + ' ' + T.path.of(r.path) + ' ' + T.protocol.of(r.protocol) +
    '" ' + int(r.status_code) +
    (e === null ? '' : ' error=' + textErrorType(e.type) + ':' + textValue(e.message)) +
    ' model_name=' + T.model_name.of(r.model_name) +
    ' model_route=' + T.model_route.of(r.model_route) +
    ' model_server=' + T.model_server.of(r.model_server) +
    ' selected_pod=' + T.selected_pod.of(r.selected_pod) +
    (r.prefill_pod ? ' prefill_pod=' + textValue(r.prefill_pod) : '') +
    ' request_id=' + textValue(r.request_id) +
    ' tokens=' + int(r.input_tokens) + '/' + int(r.output_tokens) +
    ' timings=' + int(r.duration_total) + 'ms(' + int(r.duration_request_processing) + '+' +
    int(r.duration_upstream_processing) + '+' + int(r.duration_response_processing) + ')';
}

/** One JSON object, fields in the documented order, `error` only on failure. */
export function formatJson(r: AccessRecord): string {
  return formatWith(r, jsonLine, J);
}

/** One text line (the default format). */
export function formatText(r: AccessRecord): string {
  return formatWith(r, textLine, T);
}

function fits(line: string): boolean {
  // A UTF-16 code unit is at most 3 UTF-8 bytes, so short lines need no byte count.
  return line.length * 3 <= MAX_LINE_BYTES || Buffer.byteLength(line) <= MAX_LINE_BYTES;
}

type StringField = 'method' | 'path' | 'protocol' | 'model_name' | 'model_route' | 'model_server' |
  'selected_pod' | 'prefill_pod' | 'request_id';
const STRING_FIELDS: readonly StringField[] = [
  'path', 'model_name', 'model_route', 'model_server', 'selected_pod', 'prefill_pod', 'request_id', 'method', 'protocol',
];

/** Cut `s` to at most `max` code units without splitting a surrogate pair, then mark it. */
function cut(s: string, max: number): string {
  const base = s.endsWith(TRUNCATION_MARKER) ? s.slice(0, -TRUNCATION_MARKER.length) : s;
  let n = Math.max(0, Math.min(base.length, max));
  if (n > 0 && n < base.length) {
    const c = base.charCodeAt(n - 1);
    if (c >= 0xd800 && c <= 0xdbff) n--;
  }
  return base.slice(0, n) + TRUNCATION_MARKER;
}

/**
 * Shortens the longest string value (path, error message, model name, ...) until the line
 * fits: cut as little as the line needs (the longest cut that fits, found by halving: the bytes a
 * character takes, escaped, vary), or, when even the marker alone does not fit, to the marker,
 * and then the next longest. Rare path: copies the record and formats it a few times per value.
 */
function fitLine(r: AccessRecord, format: (r: AccessRecord) => string): string {
  const copy: AccessRecord = { ...r, error: r.error === null ? null : { ...r.error } };
  let line = format(copy);
  for (let round = 0; round < 64; round++) {
    if (Buffer.byteLength(line) <= MAX_LINE_BYTES) return line;
    let longest: StringField | 'type' | 'message' = 'path';
    let longestLen = -1;
    for (const f of STRING_FIELDS) {
      const len = (copy[f] ?? '').length;
      if (len > longestLen) { longest = f; longestLen = len; }
    }
    if (copy.error !== null) {
      if (copy.error.message.length > longestLen) { longest = 'message'; longestLen = copy.error.message.length; }
      if (copy.error.type.length > longestLen) { longest = 'type'; longestLen = copy.error.type.length; }
    }
    if (longestLen <= TRUNCATION_MARKER.length) break;
    const field = longest;
    const original = field === 'message' || field === 'type' ? (copy.error as { type: string; message: string })[field] : copy[field] ?? '';
    const set = (n: number): string => {
      const v = cut(original, n);
      if (field === 'message' || field === 'type') (copy.error as { type: string; message: string })[field] = v;
      else copy[field] = v;
      return format(copy);
    };
    line = set(0);
    if (Buffer.byteLength(line) > MAX_LINE_BYTES) continue; // the next longest must give way too
    let lo = 0;
    let hi = longestLen - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (Buffer.byteLength(set(mid)) <= MAX_LINE_BYTES) lo = mid;
      else hi = mid - 1;
    }
    line = set(lo);
  }
  // Unreachable for records with integer numbers; kept so the one-line bound never depends on it.
  for (const f of STRING_FIELDS) copy[f] = '';
  if (copy.error !== null) copy.error = { type: copy.error.type.slice(0, 64), message: TRUNCATION_MARKER };
  return format(copy);
}
