import { RouterError } from '../errors.js';
import { connectFailureCause, isConnectFailure, isOutOfDescriptors, isOwnRefusal, isQueueFull } from './http1/errors.js';

/**
 * Errors that mean the request never reached the pod (safe to retry on another one): the client's
 * own test. The client's own refusals are among them (a full queue, a closed pool: the router's
 * limit, or a pod it stopped sending to), but they are not the pod's failure.
 */
export { connectFailureCause, isConnectFailure, isOwnRefusal };

/** Why a retired pod's pool closed (endpoint-registry.ts): the request that was to go to it is answered upstream_pod_removed (notSent). */
export const LEFT_CONFIG = 'the pod left the configuration';

export class ClientGone extends Error {
  readonly code = 'ROUTER_CLIENT_GONE';
}

export function formatSeconds(ms: number): string {
  const s = ms / 1000;
  return Number.isInteger(s) ? String(s) : String(Math.round(s * 1000) / 1000);
}

/** What a failed exchange (not a connect failure, not a client that left) says of the pod, for passive health. */
export const enum PodFault {
  /** Nothing: the router cut it (its pool closed: the pod left the configuration, or the router stops). */
  None,
  /** The pod did not answer, or did not go on answering, within the ModelServer's timeout. */
  Timeout,
  /**
   * The pod had the request and the connection broke before its answer ended: closed or reset
   * before the answer (an engine that crashed behind a live port), an answer cut partway, or one
   * the client could not read (malformed). An idle connection the pod closed just as the request
   * went out is no failure: the HTTP/1.1 client sends the request again, and its error never gets here.
   */
  Lost,
}

export function podFault(err: unknown): PodFault {
  const code = (err as { code?: string } | null)?.code ?? '';
  if (code === 'HTTP1_TOTAL_TIMEOUT' || code === 'HTTP1_HEADERS_TIMEOUT' || code === 'HTTP1_BODY_TIMEOUT') return PodFault.Timeout;
  if (code === 'HTTP1_ABORTED' || isConnectFailure(err)) return PodFault.None;
  return PodFault.Lost;
}

/** Maps a failed upstream exchange to the router's error registry. */
export function upstreamFailure(err: unknown, timeoutMs: number, pod: string): RouterError {
  const code = (err as { code?: string } | null)?.code ?? '';
  if (code === 'HTTP1_TOTAL_TIMEOUT' || code === 'HTTP1_HEADERS_TIMEOUT' || code === 'HTTP1_BODY_TIMEOUT') {
    return new RouterError('timeout', `inference timed out after ${formatSeconds(timeoutMs)}s`);
  }
  // The router's own cut (its pools closed: it stops, or its worker failed), not the pod's failure.
  if (code === 'HTTP1_ABORTED') return routerCut(err, pod);
  const what = (err as Error)?.message || String(err);
  if (isConnectFailure(err)) return new RouterError('upstream_error', `cannot connect to pod ${pod}: ${code} ${what}`.trim(), 502, null, 'upstream_unreachable');
  return new RouterError('upstream_error', `upstream failed on pod ${pod}: ${code ? `${code} ` : ''}${what}`, 502);
}

/**
 * A request in flight at `pod` that the router cut by closing the pod's pool (HTTP1_ABORTED): at
 * the drain timeout, or when its worker failed or lost its primary. The message leads with why.
 */
function routerCut(err: unknown, pod: string): RouterError {
  const why = (err as { closedBecause?: string } | null)?.closedBecause || 'the router closed its connections';
  return new RouterError('upstream_error', `${why}; the router cut its exchange with pod ${pod}`, 503, null, 'router_stopping');
}

/**
 * The answer for a request the router itself did not send to `pod` (isOwnRefusal), should no other
 * pod take it: its queue for the pod was full, or the pod's pool was closed, because the pod left
 * the configuration (its first close said so: LEFT_CONFIG) or because the router is stopping.
 */
export function notSent(err: unknown, pod: string): RouterError {
  const what = (err as Error)?.message || String(err);
  const podLeft = (err as { closedBecause?: string } | null)?.closedBecause === LEFT_CONFIG;
  if (isOutOfDescriptors(err)) {
    return new RouterError('upstream_error', `the router could not open a connection to pod ${pod}: ${connectFailureCause(err)} (${what}); raise the router's limit (ulimit -n, LimitNOFILE); nothing was sent to the pod`, 503, null, 'router_out_of_descriptors');
  }
  if (isQueueFull(err)) {
    return new RouterError('upstream_error', `the router's queue for pod ${pod} is full (${what}); nothing was sent to the pod`, 503, null, 'upstream_queue_full');
  }
  if (podLeft) {
    return new RouterError('upstream_error', `pod ${pod} left the configuration before the request was sent to it (${what}); no other pod took the request`, 503, null, 'upstream_pod_removed');
  }
  return new RouterError('upstream_error', `the router is stopping: nothing was sent to pod ${pod} (${what})`, 503, null, 'router_stopping');
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
