import { ERROR_CODES, type ErrorCode, type RouterError } from '../errors.js';

export const TEXT_TYPE = 'text/plain; charset=utf-8';
export const JSON_TYPE = 'application/json';

const JSON_HEAD = '{"error":{"message":';
/** `,"type":…,"param":null,"code":…}}` per code, built once. */
const JSON_TAIL = new Map<string, string>();
for (const code of Object.keys(ERROR_CODES) as ErrorCode[]) {
  JSON_TAIL.set(code, `,"type":${JSON.stringify(ERROR_CODES[code].type)},"param":null,"code":${JSON.stringify(code)}}}`);
}

/**
 * The body of a router-made error. JSON (the OpenAI error shape) when the client accepts it:
 * `{"error":{"message":…,"type":…,"param":null,"code":…}}`; otherwise the message as plain text.
 */
export function errorBody(err: RouterError, json: boolean): string {
  if (!json) return err.message;
  return JSON_HEAD + JSON.stringify(err.message) + JSON_TAIL.get(err.code)!;
}

const JSON_MEDIA = 'application/json';

/**
 * The Accept header names application/json (as the OpenAI SDKs send it). Media types are
 * matched whole (not application/json-seq) and case-insensitively.
 */
export function acceptsJson(accept: string): boolean {
  if (accept.length < JSON_MEDIA.length) return false;
  let at = accept.indexOf(JSON_MEDIA);
  if (at < 0) {
    const lower = accept.toLowerCase();
    if (lower === accept) return false;
    accept = lower;
    at = accept.indexOf(JSON_MEDIA);
  }
  while (at >= 0) {
    const end = at + JSON_MEDIA.length;
    const before = at === 0 ? 44 : accept.charCodeAt(at - 1);
    const after = end === accept.length ? 44 : accept.charCodeAt(end);
    // , ; space tab around the media type
    if ((before === 44 || before === 32 || before === 9) && (after === 44 || after === 59 || after === 32 || after === 9)) return true;
    at = accept.indexOf(JSON_MEDIA, end);
  }
  return false;
}
