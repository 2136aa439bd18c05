/**
 * The one registry of error types. Responses, the access log, metrics and docs
 * (docs/errors.md, kept in sync by test/unit/errors.test.ts) all read it.
 */
export const ERROR_TYPES = {
  invalid_request: { status: 400, meaning: 'Malformed body or parameters; 413 when the body is too large' },
  authentication_failed: { status: 401, meaning: 'Missing or invalid credentials' },
  authorization_failed: { status: 403, meaning: 'The caller may not use the requested model' },
  model_not_found: { status: 404, meaning: 'No route serves the model, or no rule of its route matches' },
  rate_limit: { status: 429, meaning: 'A token rate limit of the route is exhausted for the current window' },
  upstream_error: { status: 502, meaning: 'The backend failed (connection refused/reset, bad response, 5xx); 503 when no endpoint is ready, the limit store is unavailable, or the JWT key set cannot be fetched' },
  timeout: { status: 504, meaning: 'The backend did not answer within the timeout' },
  client_closed: { status: 499, meaning: 'The client went away before the answer ended (recorded in the access log only)' },
  pipelining_refused: { status: 444, meaning: 'Another request arrived on the connection before this answer ended; HTTP pipelining is not supported and the router closed the connection (recorded in the access log only)' },
  internal_error: { status: 500, meaning: 'A fault in the router itself (a bug): the message says what failed' },
} as const;

export type ErrorType = keyof typeof ERROR_TYPES;

/** An error the router answers itself; `status` defaults to the registry's status for `type`. */
export class RouterError extends Error {
  readonly type: ErrorType;
  readonly status: number;
  /** Extra response headers (e.g. retry-after). */
  readonly headers: Readonly<Record<string, string>> | null;

  constructor(type: ErrorType, message: string, status?: number, headers?: Record<string, string>) {
    super(message);
    this.type = type;
    this.status = status ?? ERROR_TYPES[type].status;
    this.headers = headers ?? null;
  }
}

/** Status text for the status line uWS writes ("404 Not Found"). */
const STATUS_TEXT: Record<number, string> = {
  200: 'OK', 201: 'Created', 204: 'No Content', 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden',
  404: 'Not Found', 405: 'Method Not Allowed', 408: 'Request Timeout', 413: 'Payload Too Large', 429: 'Too Many Requests', 431: 'Request Header Fields Too Large',
  499: 'Client Closed Request', 500: 'Internal Server Error', 502: 'Bad Gateway', 503: 'Service Unavailable', 504: 'Gateway Timeout',
};

const statusLineCache = new Map<number, string>();
export function statusLine(status: number): string {
  let line = statusLineCache.get(status);
  if (line === undefined) {
    line = `${status} ${STATUS_TEXT[status] ?? 'Status'}`;
    statusLineCache.set(status, line);
  }
  return line;
}
