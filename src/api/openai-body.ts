import type { UpstreamBody } from './inference-api.js';
import { parseJson, type ParsedRequest } from './openai-request.js';
import { bytesAt } from './flat-json-counts.js';
import { escapedKeyName, firstMember, KEY_END, member, NEXT, readMember, VALUE_END, VALUE_START } from './json-members.js';
import { Buffer } from 'node:buffer';

/** The member put first in a stream's body that did not name `stream_options` (the object always has `model` after it). */
const USAGE_MEMBER = Buffer.from('"stream_options":{"include_usage":true},', 'latin1');

/**
 * The body sent upstream: the client's bytes unchanged unless the ModelServer rewrites `model`
 * (`model` non-null) or a stream needs `stream_options.include_usage` turned on.
 *
 * Only the members that change are written: a stream whose body has no `stream_options` gets the
 * member spliced in after the opening brace; a rewritten `model`, or the client's own
 * `stream_options` with `include_usage` merged in, replaces that member's value in place. The
 * client's other bytes go as they came, so numbers keep their spelling and precision (a `seed` of
 * 2^63 - 1 is not rounded to a double's 9223372036854776000). Only a body that names `model` or
 * `stream_options` more than once is serialized again from the parsed object (one member each).
 *
 * `askStreamUsage` false (the Responses API: its streams always end with their usage, and it has
 * no `include_usage`, which OpenAI would refuse as unknown): nothing is added to a stream, only
 * `model` rewritten.
 */
export function buildUpstreamBody(raw: Buffer, req: ParsedRequest, model: string | null, askStreamUsage = true): UpstreamBody {
  const rewriteModel = model !== null && model !== req.model;
  const injectUsage = askStreamUsage && req.stream && !req.clientAskedUsage;
  if (!rewriteModel && !injectUsage) return { body: raw, stripUsage: false };
  const prev = req.streamOptions;
  if (!rewriteModel && prev === undefined) return { body: spliceUsageMember(raw), stripUsage: true };
  const options = injectUsage ? { ...(prev !== null && typeof prev === 'object' ? prev : {}), include_usage: true } : null;
  if (findMembers(raw)) {
    const modelValue = rewriteModel ? modelBytes(model) : null;
    const optionsValue = options !== null && found[OPTIONS] >= 0 ? Buffer.from(JSON.stringify(options)) : null;
    return { body: spliceMembers(raw, modelValue, optionsValue, options !== null && found[OPTIONS] < 0), stripUsage: injectUsage };
  }
  // Tools read by their bytes may not be in req.body: the body is parsed whole again (a rare path).
  const body = req.toolsText === null ? { ...req.body } : (parseJson(raw) as Record<string, unknown>);
  if (rewriteModel) body.model = model;
  if (options !== null) body.stream_options = options;
  return { body: Buffer.from(JSON.stringify(body)), stripUsage: injectUsage };
}

/** `raw` (a parsed JSON object with members) with USAGE_MEMBER after its opening brace. */
function spliceUsageMember(raw: Buffer): Buffer {
  const i = raw.indexOf(0x7b); // only JSON whitespace comes before the brace of a parsed object
  const out = Buffer.allocUnsafe(raw.length + USAGE_MEMBER.length);
  raw.copy(out, 0, 0, i + 1);
  USAGE_MEMBER.copy(out, i + 1);
  raw.copy(out, i + 1 + USAGE_MEMBER.length, i + 1);
  return out;
}

/** The last rewritten model's value as JSON bytes (a server's model is the same string every request). */
let lastModel = '';
let lastModelBytes: Buffer = Buffer.from('""');

function modelBytes(model: string): Buffer {
  if (model !== lastModel) {
    lastModelBytes = Buffer.from(JSON.stringify(model));
    lastModel = model;
  }
  return lastModelBytes;
}

const MODEL = 0;
const OPTIONS = 2;
/** Set by findMembers: [start, end) of the value of `model`, then of `stream_options` (-1: absent). */
const found = new Int32Array(4);
const KEY_MODEL = Buffer.from('"model"');
const KEY_OPTIONS = Buffer.from('"stream_options"');

/**
 * Finds the values of the top-level members `model` and `stream_options` of `raw`, a valid JSON
 * object (it was parsed), into `found`. False when either is named more than once (JSON.parse
 * kept the last; the body is then serialized again, so the pod cannot read another one).
 */
function findMembers(raw: Buffer): boolean {
  found.fill(-1);
  const n = raw.length;
  for (let i = firstMember(raw); i < n && raw[i] !== 0x7d; i = member[NEXT]) {
    readMember(raw, i);
    const at = memberSlot(raw, i, member[KEY_END]);
    if (at >= 0) {
      if (found[at] >= 0) return false;
      found[at] = member[VALUE_START];
      found[at + 1] = member[VALUE_END];
    }
  }
  return true;
}

/** MODEL or OPTIONS when the key raw[from, to) (quotes included) is that member's name, else -1. */
function memberSlot(raw: Buffer, from: number, to: number): number {
  const len = to - from;
  if (len === KEY_MODEL.length && bytesAt(raw, from, KEY_MODEL)) return MODEL;
  if (len === KEY_OPTIONS.length && bytesAt(raw, from, KEY_OPTIONS)) return OPTIONS;
  const name = escapedKeyName(raw, from, to);
  return name === 'model' ? MODEL : name === 'stream_options' ? OPTIONS : -1;
}

/**
 * `raw` with the value of `model` replaced by `modelValue` and that of `stream_options` by
 * `optionsValue` (null: kept), and with USAGE_MEMBER after the opening brace when `addUsage`.
 */
function spliceMembers(raw: Buffer, modelValue: Buffer | null, optionsValue: Buffer | null, addUsage: boolean): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  if (addUsage) {
    const brace = raw.indexOf(0x7b) + 1;
    parts.push(raw.subarray(0, brace), USAGE_MEMBER);
    at = brace;
  }
  const modelFirst = found[MODEL] < found[OPTIONS] || optionsValue === null;
  if (modelFirst && modelValue !== null) at = replace(parts, raw, at, MODEL, modelValue);
  if (optionsValue !== null) at = replace(parts, raw, at, OPTIONS, optionsValue);
  if (!modelFirst && modelValue !== null) at = replace(parts, raw, at, MODEL, modelValue);
  parts.push(raw.subarray(at));
  return Buffer.concat(parts);
}

function replace(parts: Buffer[], raw: Buffer, at: number, slot: number, value: Buffer): number {
  parts.push(raw.subarray(at, found[slot]), value);
  return found[slot + 1];
}
