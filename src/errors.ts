/**
 * The one registry of error types. Responses, the access log, metrics and docs
 * (docs/errors.md, kept in sync by test/unit/errors.test.ts) all read it.
 */
import { Buffer } from 'node:buffer';
import { STATUS_CODES } from 'node:http';

export const ERROR_TYPES = {
  invalid_request: { status: 400, code: 'invalid_body', meaning: 'Malformed body or parameters; 413 when the body is too large' },
  authentication_failed: { status: 401, code: 'invalid_credentials', meaning: 'Missing or invalid credentials' },
  authorization_failed: { status: 403, code: 'model_not_allowed', meaning: 'The caller may not use the requested model' },
  model_not_found: { status: 404, code: 'model_not_found', meaning: 'No route serves the model, or no rule of its route matches' },
  rate_limit: { status: 429, code: 'input_tokens_exceeded', meaning: 'A token rate limit of the route is exhausted for the current window' },
  upstream_error: { status: 502, code: 'upstream_failed', meaning: 'The backend failed (connection refused/reset, bad response, 5xx); 503 when no endpoint is ready, the limit store is unavailable, the JWT key set cannot be fetched, or the fair queue is full or waited too long' },
  timeout: { status: 504, code: 'upstream_timeout', meaning: 'The backend did not answer within the timeout' },
  client_closed: { status: 499, code: 'client_closed', meaning: 'The client went away before the answer ended, or the connection closed while the request body was arriving (recorded in the access log only)' },
  pipelining_refused: { status: 444, code: 'pipelining_refused', meaning: 'Another request arrived on the connection before this answer ended; HTTP pipelining is not supported and the router closed the connection (recorded in the access log only)' },
  internal_error: { status: 500, code: 'internal_error', meaning: 'A fault in the router itself (a bug): the message says what failed' },
} as const;

export type ErrorType = keyof typeof ERROR_TYPES;

/**
 * The machine-readable `code` of a router-made error (the `error.code` of the JSON answer):
 * stable strings, each of one type and one status. docs/errors.md lists them all.
 */
export const ERROR_CODES = {
  invalid_body: { type: 'invalid_request', status: 400 },
  missing_model: { type: 'invalid_request', status: 400 },
  missing_prompt: { type: 'invalid_request', status: 400 },
  missing_messages: { type: 'invalid_request', status: 400 },
  disaggregation_unsupported: { type: 'invalid_request', status: 400 },
  invalid_content_length: { type: 'invalid_request', status: 400 },
  unknown_endpoint: { type: 'invalid_request', status: 404 },
  method_not_allowed: { type: 'invalid_request', status: 405 },
  request_too_large: { type: 'invalid_request', status: 413 },
  missing_credentials: { type: 'authentication_failed', status: 401 },
  invalid_credentials: { type: 'authentication_failed', status: 401 },
  invalid_token: { type: 'authentication_failed', status: 401 },
  model_not_allowed: { type: 'authorization_failed', status: 403 },
  model_not_found: { type: 'model_not_found', status: 404 },
  no_matching_rule: { type: 'model_not_found', status: 404 },
  input_tokens_exceeded: { type: 'rate_limit', status: 429 },
  output_tokens_exceeded: { type: 'rate_limit', status: 429 },
  upstream_failed: { type: 'upstream_error', status: 502 },
  upstream_unreachable: { type: 'upstream_error', status: 502 },
  prefill_failed: { type: 'upstream_error', status: 502 },
  upstream_queue_full: { type: 'upstream_error', status: 503 },
  router_out_of_descriptors: { type: 'upstream_error', status: 503 },
  fair_queue_full: { type: 'upstream_error', status: 503 },
  fair_queue_timeout: { type: 'upstream_error', status: 503 },
  upstream_pod_removed: { type: 'upstream_error', status: 503 },
  no_ready_endpoint: { type: 'upstream_error', status: 503 },
  no_ready_pd_pair: { type: 'upstream_error', status: 503 },
  no_weighted_target: { type: 'upstream_error', status: 503 },
  not_configured: { type: 'upstream_error', status: 503 },
  limiter_unavailable: { type: 'upstream_error', status: 503 },
  key_set_unavailable: { type: 'upstream_error', status: 503 },
  router_stopping: { type: 'upstream_error', status: 503 },
  upstream_timeout: { type: 'timeout', status: 504 },
  client_closed: { type: 'client_closed', status: 499 },
  pipelining_refused: { type: 'pipelining_refused', status: 444 },
  internal_error: { type: 'internal_error', status: 500 },
} as const satisfies Record<string, { type: ErrorType; status: number }>;

export type ErrorCode = keyof typeof ERROR_CODES;

/**
 * Whether Error.stackTraceLimit may be set (not under `node --frozen-intrinsics`, where setting it
 * throws): RouterError then takes no stack; else it takes one, as any Error.
 */
const STACK_LIMIT_SETTABLE = Object.getOwnPropertyDescriptor(Error, 'stackTraceLimit')?.writable === true;

/**
 * An error the router answers itself; `status` defaults to the registry's status for `type`,
 * `code` to the type's default code.
 *
 * It carries no stack trace: it is an answer (a 429, a 404, a 503), made per request, whose
 * message says all there is, and capturing the stack cost about 5 µs per error answer
 * (docs/internals/performance-changes.md, "Router-made errors without a stack trace"). Its
 * `stack` is its first line only ("Error: <message>"); other errors keep theirs.
 */
export class RouterError extends Error {
  readonly type: ErrorType;
  readonly status: number;
  readonly code: ErrorCode;
  /** Extra response headers (e.g. retry-after). */
  readonly headers: Readonly<Record<string, string>> | null;

  constructor(type: ErrorType, message: string, status?: number, headers?: Record<string, string> | null, code?: ErrorCode) {
    const frames = Error.stackTraceLimit;
    if (STACK_LIMIT_SETTABLE) Error.stackTraceLimit = 0;
    super(message);
    if (STACK_LIMIT_SETTABLE) Error.stackTraceLimit = frames;
    this.type = type;
    this.status = status ?? ERROR_TYPES[type].status;
    this.headers = headers ?? null;
    this.code = code ?? ERROR_TYPES[type].code;
  }
}

/** Status text for the status line uWS writes ("404 Not Found"). */
const STATUS_TEXT: Record<number, string> = {
  200: 'OK', 201: 'Created', 204: 'No Content', 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden',
  404: 'Not Found', 405: 'Method Not Allowed', 408: 'Request Timeout', 413: 'Payload Too Large', 429: 'Too Many Requests', 431: 'Request Header Fields Too Large',
  499: 'Client Closed Request', 500: 'Internal Server Error', 502: 'Bad Gateway', 503: 'Service Unavailable', 504: 'Gateway Timeout',
};

/** The router's own codes' text, else the standard reason phrase (a pod's 304 or 422), else "Status". */
export function statusLine(status: number): string {
  return `${status} ${STATUS_TEXT[status] ?? STATUS_CODES[status] ?? 'Status'}`;
}

/** Status lines as bytes by code (three digits: 100–999), made on first use. */
const STATUS_LINE_BYTES: (Uint8Array | undefined)[] = new Array(1000).fill(undefined);

/**
 * statusLine as bytes, for uWS's writeStatus: made once per code, so an answer neither looks the
 * line up in a hash table nor has native code convert a string.
 */
export function statusLineBytes(status: number): Uint8Array {
  const line = STATUS_LINE_BYTES[status];
  if (line !== undefined) return line;
  const made = new Uint8Array(Buffer.from(statusLine(status), 'latin1'));
  if (status >= 100 && status <= 999 && (status | 0) === status) STATUS_LINE_BYTES[status] = made;
  return made;
}
