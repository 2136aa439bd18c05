/**
 * The OpenAI error shape, `{"error":{"message":…,"type":…,"param":null,"code":…}}`, of a
 * router-made error: the body of a JSON error answer (http/error-body.ts), and the data of the
 * event a stream the router cuts ends with, which the OpenAI SDKs raise as an error (an event
 * whose data has a top-level `error`, and no `event:` field: how both the Python and the Node
 * SDK read it, whatever their version).
 */
import { ERROR_CODES, type ErrorCode, type RouterError } from '../errors.js';
import { Buffer } from 'node:buffer';

const JSON_HEAD = '{"error":{"message":';
/** `,"type":…,"param":null,"code":…}}` per code, built once. */
const JSON_TAIL = new Map<string, string>();
for (const code of Object.keys(ERROR_CODES) as ErrorCode[]) {
  JSON_TAIL.set(code, `,"type":${JSON.stringify(ERROR_CODES[code].type)},"param":null,"code":${JSON.stringify(code)}}}`);
}

/** `err` in the OpenAI error shape, as JSON text. */
export function openAiErrorJson(err: RouterError): string {
  return JSON_HEAD + JSON.stringify(err.message) + JSON_TAIL.get(err.code)!;
}

/** A whole SSE event (its blank line included) whose data is `err` in the OpenAI error shape. */
export function openAiStreamErrorEvent(err: RouterError): Buffer {
  return Buffer.from(`data: ${openAiErrorJson(err)}\n\n`, 'utf8');
}
