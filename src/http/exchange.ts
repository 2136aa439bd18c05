import type { HttpResponse } from 'uWebSockets.js';
import type { RequestContext } from './request-context.js';
import type { Decision } from '../ratelimit/limiter.js';
import { drainState } from './drain-state.js';

/**
 * One inference request in flight: the uWS response, the log context and what the pipeline
 * learns along the way. Fixed shape; created once per request by the front.
 */
export class Exchange {
  readonly res: HttpResponse;
  readonly ctx: RequestContext;
  /** Path without the query string. */
  readonly url: string;
  /** Flat [name, value, …] of request headers to forward upstream (lower-case names). */
  readonly forwardHeaders: string[];
  /** Values of the headers route rules match on, by lower-case name. */
  readonly matchHeaders: Map<string, string> | null;
  /** Raw Authorization header ("" when absent); never forwarded when auth is on. */
  readonly authorization: string;

  body: Buffer = EMPTY;
  /** Status and headers have been written to the client. */
  headersSent = false;
  /** Limiter decision of a limited route (for the x-ratelimit-* headers), else null. */
  decision: Decision | null = null;
  /** The upstream exchange in progress, cancelled by the front when the client goes away. */
  upstream: { abortForClient(): void } | null = null;
  /** The request reached a pod (anything but a connection failure): its input tokens stay charged. */
  reachedPod = false;
  /** Close the connection after the answer (oversized body); also always while draining. */
  forceClose = false;

  constructor(res: HttpResponse, ctx: RequestContext, url: string, forwardHeaders: string[], matchHeaders: Map<string, string> | null, authorization: string) {
    this.res = res;
    this.ctx = ctx;
    this.url = url;
    this.forwardHeaders = forwardHeaders;
    this.matchHeaders = matchHeaders;
    this.authorization = authorization;
  }

  header(name: string): string {
    return this.matchHeaders?.get(name) ?? '';
  }

  get closeConnection(): boolean {
    return this.forceClose || drainState.draining;
  }

  /** True while the client can still be written to. */
  get writable(): boolean {
    return !this.ctx.aborted && !this.ctx.finished;
  }
}

const EMPTY = Buffer.alloc(0);
