import type { RouterError } from '../errors.js';
import { openAiErrorJson } from '../api/openai-error.js';

export const TEXT_TYPE = 'text/plain; charset=utf-8';
export const JSON_TYPE = 'application/json';

/**
 * The body of a router-made error. JSON (the OpenAI error shape) when the client accepts it:
 * `{"error":{"message":…,"type":…,"param":null,"code":…}}`; otherwise the message as plain text.
 */
export function errorBody(err: RouterError, json: boolean): string {
  return json ? openAiErrorJson(err) : err.message;
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
