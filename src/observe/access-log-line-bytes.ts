import type { AccessRecord } from './access-record.js';
import { isJsonPlain, isTextPlainAscii, jsonString, textValue } from './access-log-escape.js';
import { int, MAX_LINE_BYTES } from './access-log-format.js';
import { isoTimestamp, timestampMs } from './access-log-timestamp.js';
import { putNumber } from '../decimal-digits.js';
import { GroupBytes, utf8Bytes as bytes } from './group-bytes.js';
import { Buffer } from 'node:buffer';

/**
 * The access-log line of a usual record, JSON or text, written as bytes straight into the batch
 * buffer: the same bytes as `formatJson` / `formatText` (access-log-format.ts), without building
 * the line as a string of about forty pieces, flattening it and copying it out (about 1.7 KB of
 * garbage and a few thousand instructions per record). The text around the values that repeat
 * from record to record (method, path and protocol; model, route and server; the pod) is kept as
 * bytes per value, with its escaping done once; the numbers are written as digits.
 *
 * A record with an error, a request id that needs escaping, or values long enough that the line
 * might pass MAX_LINE_BYTES is not written here (-1): the string formatter writes it, and
 * shortens it when it must.
 */

const JSON_REQUEST = new GroupBytes((path, method, protocol) =>
  'Z","method":' + jsonString(method) + ',"path":' + jsonString(path) + ',"protocol":' + jsonString(protocol) + ',"status_code":');
const JSON_TARGET = new GroupBytes((model, route, server) =>
  ',"model_name":' + jsonString(model) + ',"model_route":' + jsonString(route) + ',"model_server":' + jsonString(server) + ',"selected_pod":');
const JSON_POD = new GroupBytes((pod, prefill) => jsonString(pod) + (prefill === '' ? '' : ',"prefill_pod":' + jsonString(prefill)) + ',"request_id":"');

const INPUT_TOKENS = bytes('","input_tokens":');
const OUTPUT_TOKENS = bytes(',"output_tokens":');
const DURATION_TOTAL = bytes(',"duration_total":');
const DURATION_REQUEST = bytes(',"duration_request_processing":');
const DURATION_UPSTREAM = bytes(',"duration_upstream_processing":');
const DURATION_RESPONSE = bytes(',"duration_response_processing":');
const CLOSE = 0x7d; // }
const ZERO = 0x30;

/** The line's opening and the record's time up to the second's dot, kept for the current second, per format. */
class TimestampHead {
  private second = Number.NaN;
  private head: Uint8Array = new Uint8Array(0);

  constructor(private readonly opening: string) {}

  /** Writes the opening, the time and its milliseconds (3 digits) at `at`; returns the end. */
  put(buf: Buffer, at: number, timestamp: number): number {
    const t = timestampMs(timestamp);
    const second = Math.floor(t / 1000);
    if (second !== this.second) {
      this.head = bytes(this.opening + isoTimestamp(second * 1000).slice(0, -4));
      this.second = second;
    }
    buf.set(this.head, at);
    at += this.head.length;
    const ms = t - second * 1000;
    buf[at] = ZERO + ((ms / 100) | 0);
    buf[at + 1] = ZERO + (((ms / 10) | 0) % 10);
    buf[at + 2] = ZERO + (ms % 10);
    return at + 3;
  }
}

const JSON_TIMESTAMP = new TimestampHead('{"timestamp":"');

/** Bytes the fixed parts and the numbers take at most: keys, quotes, 7 numbers of up to 17 digits. */
const FIXED_BOUND = 40 + INPUT_TOKENS.length + OUTPUT_TOKENS.length + DURATION_TOTAL.length + DURATION_REQUEST.length
  + DURATION_UPSTREAM.length + DURATION_RESPONSE.length + 7 * 24;

/**
 * One format's line up to the request id: the opening and the time, the request's group, the
 * status, the target's group, the pod's group and the id, written as bytes; the caller writes
 * the rest (tokens and timings).
 */
class LineHead {
  constructor(
    private readonly timestamp: TimestampHead,
    private readonly request: GroupBytes,
    private readonly target: GroupBytes,
    private readonly pod: GroupBytes,
    /** Whether a request id is written as it is in this format. */
    private readonly plainId: (id: string) => boolean,
  ) {}

  /** Writes the head of `r` at `at`; returns where it ends, or -1 when the record is left to the string formatter. */
  put(r: AccessRecord, buf: Buffer, at: number): number {
    if (r.error !== null) return -1;
    const id = r.request_id;
    if (r.request_id_made !== true && !this.plainId(id)) return -1;
    const request = this.request.of(r.path, r.method, r.protocol);
    const target = this.target.of(r.model_name, r.model_route, r.model_server);
    const pod = this.pod.of(r.selected_pod, r.prefill_pod ?? '', '');
    if (FIXED_BOUND + request.length + target.length + pod.length + id.length > MAX_LINE_BYTES) return -1;
    at = this.timestamp.put(buf, at, r.timestamp);
    buf.set(request, at);
    at = putNumber(buf, at + request.length, int(r.status_code));
    buf.set(target, at);
    at += target.length;
    buf.set(pod, at);
    at += pod.length;
    return at + buf.write(id, at, 'latin1');
  }
}

/** The most groups one of the JSON format's GroupBytes holds now (its bound, GROUP_LIMIT, is tested). */
export function jsonGroupsHeld(): number {
  return Math.max(JSON_REQUEST.size, JSON_TARGET.size, JSON_POD.size);
}

const JSON_HEAD = new LineHead(JSON_TIMESTAMP, JSON_REQUEST, JSON_TARGET, JSON_POD, isJsonPlain);

/**
 * Writes the JSON line of `r` (no newline) into `buf` at `at`, which has room for MAX_LINE_BYTES;
 * returns where it ends, or -1 when the record is left to formatJson (see above).
 */
export function writeJsonRecord(r: AccessRecord, buf: Buffer, at: number): number {
  at = JSON_HEAD.put(r, buf, at);
  if (at < 0) return -1;
  at = putPair(buf, at, INPUT_TOKENS, int(r.input_tokens));
  at = putPair(buf, at, OUTPUT_TOKENS, int(r.output_tokens));
  at = putPair(buf, at, DURATION_TOTAL, int(r.duration_total));
  at = putPair(buf, at, DURATION_REQUEST, int(r.duration_request_processing));
  at = putPair(buf, at, DURATION_UPSTREAM, int(r.duration_upstream_processing));
  at = putPair(buf, at, DURATION_RESPONSE, int(r.duration_response_processing));
  buf[at] = CLOSE;
  return at + 1;
}

function putPair(buf: Buffer, at: number, key: Uint8Array, n: number): number {
  buf.set(key, at);
  return putNumber(buf, at + key.length, n);
}

// ---- text ----

const TEXT_REQUEST = new GroupBytes((path, method, protocol) =>
  'Z] "' + textValue(method) + ' ' + textValue(path) + ' ' + textValue(protocol) + '" ');
const TEXT_TARGET = new GroupBytes((model, route, server) =>
  ' model_name=' + textValue(model) + ' model_route=' + textValue(route) + ' model_server=' + textValue(server) + ' selected_pod=');
const TEXT_POD = new GroupBytes((pod, prefill) => textValue(pod) + (prefill === '' ? '' : ' prefill_pod=' + textValue(prefill)) + ' request_id=');
const TEXT_TIMESTAMP = new TimestampHead('[');
const TOKENS = bytes(' tokens=');
const TIMINGS = bytes(' timings=');
const SLASH = 0x2f;
const PLUS = 0x2b;

const TEXT_HEAD = new LineHead(TEXT_TIMESTAMP, TEXT_REQUEST, TEXT_TARGET, TEXT_POD, isTextPlainAscii);

/** As writeJsonRecord, for the text format (`formatText`). */
export function writeTextRecord(r: AccessRecord, buf: Buffer, at: number): number {
  at = TEXT_HEAD.put(r, buf, at);
  if (at < 0) return -1;
  at = putPair(buf, at, TOKENS, int(r.input_tokens));
  buf[at] = SLASH;
  at = putNumber(buf, at + 1, int(r.output_tokens));
  at = putPair(buf, at, TIMINGS, int(r.duration_total));
  buf[at] = 0x6d; // m
  buf[at + 1] = 0x73; // s
  buf[at + 2] = 0x28; // (
  at = putNumber(buf, at + 3, int(r.duration_request_processing));
  buf[at] = PLUS;
  at = putNumber(buf, at + 1, int(r.duration_upstream_processing));
  buf[at] = PLUS;
  at = putNumber(buf, at + 1, int(r.duration_response_processing));
  buf[at] = 0x29; // )
  return at + 1;
}
