import { RouterError } from '../errors.js';
import type { AnswerUsage, InferenceApi, InferenceRequest, UpstreamBody } from '../api/inference-api.js';
import type { Exchange } from '../http/exchange.js';
import type { CompiledServer } from '../route/route-table.js';
import type { EndpointState } from '../upstream/endpoint-registry.js';
import { startUpstreamCall, upstreamResult } from '../upstream/forward.js';
import { CallOutcome, type CallListener, type UpstreamCall } from '../upstream/upstream-call.js';
import { connectFailureCause, isOwnRefusal, notSent, upstreamFailure } from '../upstream/upstream-errors.js';
import { AttemptsEnd, countPodFault, type ProxyListener } from './attempts-end.js';
import type { PromptText } from '../tokens/prompt-text.js';
import type { TokenCounter } from '../tokens/token-counter.js';
import type { Scheduler } from './scheduler.js';
import type { RequestSpan } from '../observe/tracer.js';
import { proxyDisaggregated } from './proxy-disaggregated.js';

export type { ProxyListener };

/**
 * Picks a pod and forwards. A pod that was not reached is always left for another one; with the
 * ModelServer's retry policy, a failure before any byte reached the client (timeout, reset) too.
 * At most `server.retry.attempts` more pods (2 without a policy), each pod at most once.
 *
 * Plain calls, no Promise: the attempt goes out now, and the pod's answer comes back through the
 * call's listener (`callEnded`, a microtask after the answer ended, as an awaited Promise would
 * continue). `listener` hears the end once. Throws only what the request's body makes throw
 * before any attempt (`upstreamBody`).
 */
export function proxyWithRetries(
  x: Exchange, api: InferenceApi, tokens: TokenCounter, server: CompiledServer, req: InferenceRequest, prompt: PromptText | null,
  scheduler: Scheduler, span: RequestSpan | null, listener: ProxyListener,
): void {
  // Compiled per ModelServer: a server without pdGroup takes no other step.
  if (server.pd !== null) proxyDisaggregated(x, api, tokens, server, server.pd, req, prompt, scheduler, span, listener);
  else new ProxyAttempts(x, api, tokens, server, req, prompt, scheduler, span, listener).next();
}

/** The attempts of one request, one pod at a time. */
class ProxyAttempts extends AttemptsEnd implements CallListener {
  private readonly up: UpstreamBody;
  private attempt = 0;
  /** The pods tried: the first alone until a retry (no array for the usual single attempt). */
  private first: EndpointState | null = null;
  private tried: EndpointState[] | null = null;
  private lastError: RouterError | null = null;
  /** lastError is the router's own refusal to send to a pod (notSent), not a pod's failure. */
  private lastRefusedHere = false;
  /** The last failure of a pod that had the request (a timeout, say): the answer again once a later refusal is set aside. */
  private podError: RouterError | null = null;
  /** The pod of the attempt in flight. */
  private endpoint: EndpointState | null = null;
  /** Each pod the request was not sent to and why (`pod-a: connection refused`), for the answer when none had it: made only on such a failure. */
  private unreached: string[] | null = null;
  /** Clock ms of its pick, as its request went out: an answer to a request sent before an ejection does not end it. */
  private sentAt = 0;
  /** The pod the next attempt goes to once the retry interval is over. */
  private afterWait: EndpointState | null = null;

  constructor(
    private readonly x: Exchange,
    private readonly api: InferenceApi,
    private readonly tokens: TokenCounter,
    private readonly server: CompiledServer,
    private readonly req: InferenceRequest,
    private readonly prompt: PromptText | null,
    private readonly scheduler: Scheduler,
    private readonly span: RequestSpan | null,
    listener: ProxyListener,
  ) {
    super(listener);
    this.up = api.upstreamBody(x.body, req, server.model);
  }

  /** The next attempt: picks a pod not tried yet and sends, or ends with the error. */
  next(): void {
    try {
      this.tryNext();
    } catch (err) {
      this.caught(err);
    }
  }

  private tryNext(): void {
    const endpoint = this.scheduler.pick(this.server, this.first === null ? null : (this.tried ??= [this.first]), this.prompt);
    this.sentAt = this.scheduler.pickedAt;
    if (endpoint === null) {
      if (this.first === null) {
        this.failed(new RouterError('upstream_error', `no ready endpoint for ModelServer ${this.server.key}`, 503, null, 'no_ready_endpoint'));
      } else {
        this.exhausted();
      }
      return;
    }
    if (this.attempt > 0) {
      this.scheduler.retried(this.server.key);
      const wait = this.server.retry.intervalMs;
      if (wait > 0) {
        this.afterWait = endpoint;
        this.waitInterval(this.x, wait);
        return;
      }
      if (!this.x.writable) {
        this.succeeded(null); // client left: nothing to retry for
        return;
      }
    }
    this.send(endpoint);
  }

  protected afterInterval(): void {
    const endpoint = this.afterWait!;
    this.afterWait = null;
    try {
      if (!this.x.writable) this.succeeded(null); // client left while we waited
      else this.send(endpoint);
    } catch (err) {
      this.caught(err);
    }
  }

  private send(endpoint: EndpointState): void {
    if (this.first === null) this.first = endpoint;
    else this.tried!.push(endpoint);
    this.endpoint = endpoint;
    this.x.ctx.selectedPod = endpoint.name;
    if (this.span !== null) this.span.pod = endpoint.origin;
    try {
      startUpstreamCall(this.x, this.api, this.tokens, endpoint, this.up, this.req.stream, this.server.timeoutMs, this);
    } catch (err) {
      this.attemptFailed(err, endpoint);
    }
  }

  /** The attempt's call ended (CallListener). */
  callEnded(call: UpstreamCall, outcome: CallOutcome): void {
    try {
      this.attemptEnded(call, outcome);
    } catch (err) {
      this.caught(err);
    }
  }

  private attemptEnded(call: UpstreamCall, outcome: CallOutcome): void {
    const endpoint = this.endpoint!;
    // A pod that had the request and failed it (timed out, broke the connection before its
    // answer ended) counts for passive health, whatever reached the client.
    if (outcome === CallOutcome.FailedBeforeResponse || outcome === CallOutcome.FailedMidResponse) countPodFault(this.scheduler, endpoint, call.error);
    let r: AnswerUsage | null | 'retry';
    try {
      r = upstreamResult(this.x, call, outcome, endpoint, this.server.timeoutMs);
    } catch (err) {
      this.attemptFailed(err, endpoint);
      return;
    }
    if (r !== 'retry') {
      // The attempt's own marks (startUpstreamCall, upstreamResult): the pod's time to the first
      // byte of a stream, else to the end of the answer, and its status. No clock read of its own.
      // A client that went away says nothing of the pod: its answer (if any) is not counted.
      // An answer cut partway (FailedMidResponse) was counted above, as the failure it is.
      const ctx = this.x.ctx;
      if (outcome === CallOutcome.Done && !ctx.aborted) this.scheduler.answered(endpoint, (ctx.tFirstByte > ctx.tUpstreamStart ? ctx.tFirstByte : ctx.tUpstreamEnd) - ctx.tUpstreamStart, call.upstreamStatus, call.retryAfter, this.sentAt);
      this.succeeded(r);
      return;
    }
    // Not sent. The router's own refusal (its queue for the pod was full, or the pod's pool closed:
    // the pod left the configuration, or the router stops) is not the pod's failure: not counted
    // for passive health; the answer if no other pod takes the request.
    (this.unreached ??= []).push(`${endpoint.name}: ${connectFailureCause(call.error)}`);
    if (isOwnRefusal(call.error)) {
      this.lastError = notSent(call.error, endpoint.name);
      this.lastRefusedHere = true;
    } else {
      this.scheduler.connectFailed(endpoint);
      // A pod not reached after the router's own refusal of another: the answer, should this be
      // the last attempt, is not the earlier refusal but the failure of a pod that had the request
      // before (it timed out, say), else that no pod could be reached.
      if (this.lastRefusedHere) {
        this.lastError = this.podError;
        this.lastRefusedHere = false;
      }
    }
    if (this.attempt >= this.server.retry.attempts || !this.x.writable) {
      this.exhausted();
      return;
    }
    this.attempt++;
    this.next();
  }

  /** The attempt failed with `err` (thrown by the call's start or by its result). */
  private attemptFailed(err: unknown, endpoint: EndpointState): void {
    const retry = this.server.retry;
    if (!retry.anyFailure || this.attempt >= retry.attempts || !(err instanceof RouterError) || this.x.headersSent || !this.x.writable) {
      this.failed(err);
      return;
    }
    this.lastError = this.podError = err;
    this.lastRefusedHere = false;
    this.attempt++;
    this.next();
  }

  /** Every attempt allowed was made (or no pod is left to try). */
  private exhausted(): void {
    if (this.lastError !== null) {
      this.failed(this.lastError);
      return;
    }
    // No pod had the request (one that had it and failed it set lastError).
    const tried = this.unreached ?? (this.tried ?? [this.first!]).map((e) => e.name);
    this.failed(new RouterError('upstream_error', `cannot connect to any pod of ModelServer ${this.server.key} (tried ${tried.join(', ')})`, 502, null, 'upstream_unreachable'));
  }
}
