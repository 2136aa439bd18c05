import type { Exchange, StreamSource } from '../http/exchange.js';
import type { EndpointState } from './endpoint-registry.js';
import type { Http1Handler, Http1Request } from './http1/request.js';
import { withRouterHeaders } from './forward.js';
import { dropNamed } from '../http/upstream-headers.js';
import { ClientGone, isConnectFailure } from './upstream-errors.js';
import { hasRetryAfter } from './upstream-call.js';
import { Buffer } from 'node:buffer';

/** Most of a prefill answer kept (one generated token and the KV transfer parameters: a few KB). */
export const PREFILL_ANSWER_LIMIT = 1024 * 1024;

/** Who hears that a prefill call ended: once, a microtask after it settled. */
export interface PrefillListener {
  prefillEnded(call: PrefillCall): void;
}

const RESOLVED = Promise.resolve();
const CONTENT_ENCODING = ['content-encoding'];

/**
 * The prefill request of a request split between a prefill and a decode pod: sent to the prefill
 * pod on its pool, its whole answer kept (nothing of it goes to the client unless the pipeline
 * passes a refusal through). The exchange's `upstream` while it runs, so a client that leaves
 * cancels it.
 */
export class PrefillCall implements Http1Handler, StreamSource {
  private req: Http1Request | null = null;
  private chunks: Buffer[] = [];
  private bytes = 0;
  private settled = false;
  /** The answer's status (0: none came). */
  status = 0;
  /** A 503 with retry-after: the pod is overloaded, not broken (as UpstreamCall.retryAfter). */
  retryAfter = false;
  headers: string[] = [];
  headAscii = false;
  /** The whole answer, once it ended. */
  body: Buffer | null = null;
  /** Why it failed (a connect failure, a timeout, a broken or oversized answer, the client gone), or null. */
  error: Error | null = null;

  constructor(
    readonly endpoint: EndpointState,
    private readonly listener: PrefillListener,
  ) {
    endpoint.begin();
  }

  /** Sends `body` to the prefill pod with the client's headers (as the decode request has them); bounded as a whole by `timeoutMs`. */
  send(x: Exchange, body: Buffer, timeoutMs: number): void {
    const headers = withRouterHeaders(x.forwardHeaders, x.ctx.requestId, x.traceparent);
    dropNamed(headers, CONTENT_ENCODING);
    this.req = this.endpoint.pool.dispatch({ path: x.upstreamPath, method: 'POST', headers, body, headersTimeoutMs: 0, bodyTimeoutMs: 0, totalTimeoutMs: timeoutMs }, this);
  }

  /** The pod was not reached: nothing was sent to it (a connection failure, or the router's own refusal). */
  get notReached(): boolean {
    return this.status === 0 && this.error !== null && !(this.error instanceof ClientGone) && isConnectFailure(this.error);
  }

  onHeaders(statusCode: number, headers: string[], req: Http1Request): boolean {
    this.status = statusCode;
    if (statusCode === 503) this.retryAfter = hasRetryAfter(headers);
    this.headers = headers;
    this.headAscii = req.headAscii;
    return true;
  }

  onData(chunk: Buffer, req: Http1Request): boolean {
    this.bytes += chunk.length;
    if (this.bytes > PREFILL_ANSWER_LIMIT) {
      req.abort(new Error(`the prefill answer is longer than ${PREFILL_ANSWER_LIMIT} bytes`));
      return false;
    }
    this.chunks.push(chunk);
    return true;
  }

  onComplete(): void {
    this.body = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks);
    this.chunks = [];
    this.settle();
  }

  onError(err: Error): void {
    this.error = err;
    this.chunks = [];
    this.settle();
  }

  /** StreamSource: nothing of a prefill answer is written to the client, so nothing waits for it. */
  pause(): void {}
  resume(): void {}

  abortForClient(): void {
    this.abort(new ClientGone('client went away'));
  }

  /** Cuts the call (SGLang: its decode failed); its listener still hears the end. */
  abort(reason: Error): void {
    this.req?.abort(reason);
  }

  private settle(): void {
    if (this.settled) return;
    this.settled = true;
    this.req = null;
    this.endpoint.end();
    // Never from inside the HTTP/1.1 client's own calls (as UpstreamCall): what the listener starts next runs on a settled client.
    void RESOLVED.then(() => this.listener.prefillEnded(this));
  }
}
