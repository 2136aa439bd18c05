/**
 * Errors of the HTTP/1.1 upstream client. Socket errors (ECONNREFUSED, ECONNRESET, …) are passed
 * through as Node reports them, with their errno `code`; the client's own failures carry one of
 * the codes below. `beforeSend` is true when nothing of the request reached the server, so the
 * caller may try another one.
 */
export type Http1ErrorCode =
  | 'HTTP1_MALFORMED_RESPONSE'
  | 'HTTP1_HEADERS_TOO_LARGE'
  | 'HTTP1_CONNECT_TIMEOUT'
  | 'HTTP1_HEADERS_TIMEOUT'
  | 'HTTP1_BODY_TIMEOUT'
  | 'HTTP1_TOTAL_TIMEOUT'
  | 'HTTP1_PREMATURE_CLOSE'
  | 'HTTP1_QUEUE_FULL'
  | 'HTTP1_POOL_CLOSED'
  | 'HTTP1_ABORTED';

export class Http1Error extends Error {
  readonly code: Http1ErrorCode;
  /**
   * HTTP1_POOL_CLOSED: why the pool was closed (the `why` of its first close); HTTP1_ABORTED: the
   * `why` of the close that cut the request in flight; else ''.
   */
  readonly closedBecause: string;

  constructor(code: Http1ErrorCode, message: string, closedBecause = '') {
    super(message);
    this.code = code;
    this.closedBecause = closedBecause;
  }
}

/**
 * Failures that mean the request never reached the server. HTTP1_QUEUE_FULL and HTTP1_POOL_CLOSED
 * are the client's own refusals (its queue limit, its pool closed), not the server's failure.
 */
const CONNECT_CODES = new Set([
  'ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND', 'EADDRNOTAVAIL', 'HTTP1_CONNECT_TIMEOUT',
  'HTTP1_QUEUE_FULL', 'HTTP1_POOL_CLOSED', 'EMFILE', 'ENFILE',
]);

/** True when `err` says the request never reached the server (safe to retry elsewhere). */
export function isConnectFailure(err: unknown): boolean {
  const code = (err as { code?: string } | null)?.code;
  return code !== undefined && CONNECT_CODES.has(code);
}

/** Why a request was not sent to a pod (not reached, or the router's own refusal), in words that name no address (the client reads them): by its code. */
const CONNECT_CAUSES: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  HTTP1_CONNECT_TIMEOUT: 'connect timed out',
  ENOTFOUND: 'host name not found',
  EAI_AGAIN: 'host name not resolved (DNS did not answer)',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  EADDRNOTAVAIL: 'no local address available',
  ECONNRESET: 'connection reset',
  HTTP1_QUEUE_FULL: 'its queue in the router is full',
  HTTP1_POOL_CLOSED: 'the router no longer sends to it',
  EMFILE: 'the router\'s worker has no file descriptor free (its open-file limit)',
  ENFILE: 'the system\'s open-file table is full',
};

/** Why a request was not sent to a pod, for a message: `connection refused`, `host name not found`, …, else the error's code. */
export function connectFailureCause(err: unknown): string {
  const code = (err as { code?: string } | null)?.code;
  return code === undefined ? 'connect failed' : CONNECT_CAUSES[code] ?? code;
}

/** True when `err` is the client's refusal of a request because the pool's queue was full (the server was not tried). */
export function isQueueFull(err: unknown): boolean {
  return (err as { code?: string } | null)?.code === 'HTTP1_QUEUE_FULL';
}

/**
 * True when `err` is one of the client's own refusals (HTTP1_QUEUE_FULL, HTTP1_POOL_CLOSED): the
 * request was not sent, and the server did not fail it.
 */
export function isOwnRefusal(err: unknown): boolean {
  const code = (err as { code?: string } | null)?.code;
  return code === 'HTTP1_QUEUE_FULL' || code === 'HTTP1_POOL_CLOSED' || isOutOfDescriptors(err);
}

/** True when a connection could not be opened for want of a file descriptor: the router's shortage (EMFILE, ENFILE), not the server's failure. */
export function isOutOfDescriptors(err: unknown): boolean {
  const code = (err as { code?: string } | null)?.code;
  return code === 'EMFILE' || code === 'ENFILE';
}

export function malformed(message: string): Http1Error {
  return new Http1Error('HTTP1_MALFORMED_RESPONSE', `malformed response from upstream: ${message}`);
}
