import { RouterError } from '../errors.js';
import { isConnectFailure } from './http1/errors.js';

/** Errors that mean the request never reached the pod (safe to retry on another one): the client's own test. */
export { isConnectFailure };

export class ClientGone extends Error {
  readonly code = 'ROUTER_CLIENT_GONE';
}

export function formatSeconds(ms: number): string {
  const s = ms / 1000;
  return Number.isInteger(s) ? String(s) : String(Math.round(s * 1000) / 1000);
}

/** Maps a failed upstream exchange to the router's error registry. */
export function upstreamFailure(err: unknown, timeoutMs: number, pod: string): RouterError {
  const code = (err as { code?: string } | null)?.code ?? '';
  if (code === 'HTTP1_TOTAL_TIMEOUT' || code === 'HTTP1_HEADERS_TIMEOUT' || code === 'HTTP1_BODY_TIMEOUT') {
    return new RouterError('timeout', `inference timed out after ${formatSeconds(timeoutMs)}s`);
  }
  const what = (err as Error)?.message || String(err);
  if (isConnectFailure(err)) return new RouterError('upstream_error', `cannot connect to pod ${pod}: ${code} ${what}`.trim(), 502, null, 'upstream_unreachable');
  return new RouterError('upstream_error', `upstream failed on pod ${pod}: ${code ? `${code} ` : ''}${what}`, 502);
}

/** Error type recorded for an upstream non-2xx answer that is passed through unchanged. */
export function errorTypeOfUpstreamStatus(status: number) {
  if (status >= 500) return status === 504 ? 'timeout' as const : 'upstream_error' as const;
  if (status === 429) return 'rate_limit' as const;
  if (status === 401) return 'authentication_failed' as const;
  if (status === 403) return 'authorization_failed' as const;
  if (status === 404) return 'model_not_found' as const;
  if (status === 408) return 'timeout' as const;
  return 'invalid_request' as const;
}
