import { RouterError } from '../errors.js';
import type { AnswerUsage, DisaggregatedBodies, InferenceApi, InferenceRequest } from '../api/inference-api.js';
import type { Exchange } from '../http/exchange.js';
import type { CompiledPd, CompiledServer } from '../route/route-table.js';
import type { EndpointState } from '../upstream/endpoint-registry.js';
import { startUpstreamCall, upstreamResult } from '../upstream/forward.js';
import { PrefillCall, type PrefillListener } from '../upstream/prefill-call.js';
import { CallOutcome, type CallListener, type UpstreamCall } from '../upstream/upstream-call.js';
import { ClientGone, PodFault, errorTypeOfUpstreamStatus, formatSeconds, isOwnRefusal, notSent, upstreamFailure } from '../upstream/upstream-errors.js';
import { AttemptsEnd, countPodFault, type ProxyListener } from './attempts-end.js';
import type { PromptText } from '../tokens/prompt-text.js';
import type { TokenCounter } from '../tokens/token-counter.js';
import type { Scheduler } from './scheduler.js';
import type { RequestSpan } from '../observe/tracer.js';
import { newBootstrapRoom } from '../api/sglang-bootstrap-room.js';
import { performance } from 'node:perf_hooks';
import { Buffer } from 'node:buffer';

const NO_BODY = Buffer.alloc(0);

/** Why the router cut an SGLang decode request: its prefill failed before the decode answer started. */
class PrefillEnded extends Error {}

/**
 * Forwards a request of a ModelServer with prefill/decode disaggregation (pdGroup), as the route
 * API's router does: a decode pod picked by the scorers among those of the groups that have both
 * roles, then a prefill pod of its group; the prefill request (no stream, one token; with NIXL or
 * Mooncake, `kv_transfer_params` asking for a remote decode) goes first, its answer is kept, then
 * the decode request (the client's, with the prefill answer's `kv_transfer_params` for NIXL or
 * Mooncake) goes to the decode pod, whose answer goes to the client as any pod's does.
 *
 * SGLang (pd.sglang), as the route API's router: both requests go out together, sharing a random
 * bootstrap room, the decode one naming the prefill pod's host; the decode answer goes to the
 * client, the prefill answer is read and dropped. A decode that fails cancels the prefill; a
 * prefill that fails before the decode answer started cancels the decode and the attempt fails as
 * a failed prefill does.
 *
 * Retries as proxyWithRetries: a pod not reached (prefill or decode) leaves the pair for another;
 * with the ModelServer's retry policy, any failure before a byte reached the client too. Each
 * failed pod is not picked again for the request.
 */
export function proxyDisaggregated(
  x: Exchange, api: InferenceApi, tokens: TokenCounter, server: CompiledServer, pd: CompiledPd, req: InferenceRequest, prompt: PromptText | null,
  scheduler: Scheduler, span: RequestSpan | null, listener: ProxyListener,
): void {
  const bodies = api.disaggregation;
  if (bodies === null || !bodies.supports(req)) {
    throw new RouterError('invalid_request', `ModelServer ${server.key} splits each request between a prefill and a decode pod (workloadSelector.pdGroup), `
      + `which the router does for /v1/completions and /v1/chat/completions only, not ${x.url}`, 400, null, 'disaggregation_unsupported');
  }
  new PdAttempts(x, api, bodies, tokens, server, pd, req, prompt, scheduler, span, listener).next();
}

class PdAttempts extends AttemptsEnd implements CallListener, PrefillListener {
  private readonly prefillBody: Buffer;
  private attempt = 0;
  /** Decode pods not to pick again: they failed, or no prefill pod of their group is left. */
  private readonly skipDecode: EndpointState[] = [];
  /** Prefill pods that failed. */
  private readonly skipPrefill: EndpointState[] = [];
  private decode: EndpointState | null = null;
  private prefill: EndpointState | null = null;
  private decodeSentAt = 0;
  private prefillSentAt = 0;
  /** The decode pod is counted in flight for this request while its prefill runs (sendPrefill). */
  private decodeReserved = false;
  /** performance.now() when the attempt's prefill, then its decode request, went out. */
  private prefillStart = 0;
  private decodeStart = 0;
  private lastError: RouterError | null = null;
  /** SGLang: the attempt's prefill call while it runs (null once it ended or was cut). */
  private sgPrefill: PrefillCall | null = null;
  /** SGLang: the attempt's decode call while it runs. */
  private sgDecode: UpstreamCall | null = null;
  /** SGLang: what to do once the decode call, cut because its prefill failed, has ended. */
  private sgPrefillOutcome: (() => void) | null = null;

  constructor(
    private readonly x: Exchange,
    private readonly api: InferenceApi,
    private readonly bodies: DisaggregatedBodies,
    private readonly tokens: TokenCounter,
    private readonly server: CompiledServer,
    private readonly pd: CompiledPd,
    private readonly req: InferenceRequest,
    private readonly prompt: PromptText | null,
    private readonly scheduler: Scheduler,
    private readonly span: RequestSpan | null,
    listener: ProxyListener,
  ) {
    super(listener);
    // SGLang's prefill body has the attempt's own bootstrap room.
    this.prefillBody = pd.sglang ? NO_BODY : bodies.prefillBody(x.body, req, server.model, pd.kvTransfer);
  }

  next(): void {
    try {
      this.tryNext();
    } catch (err) {
      this.caught(err);
    }
  }

  private tryNext(): void {
    if (!this.pickPair()) {
      if (this.attempt === 0) {
        this.failed(new RouterError('upstream_error', `no group of ModelServer ${this.server.key} has a ready prefill pod and a ready decode pod`, 503, null, 'no_ready_pd_pair'));
      } else {
        this.exhausted();
      }
      return;
    }
    if (this.attempt > 0) {
      this.scheduler.retried(this.server.key);
      const wait = this.server.retry.intervalMs;
      if (wait > 0) {
        this.waitInterval(this.x, wait);
        return;
      }
      if (!this.x.writable) {
        this.succeeded(null);
        return;
      }
    }
    this.send();
  }

  private send(): void {
    if (this.pd.sglang) this.sendSglang();
    else this.sendPrefill();
  }

  /**
   * A decode pod, then a prefill pod of its group, by the scorers; false when no pair is left. A
   * group whose prefill pods are all ejected is passed over for another (the prefill pick would
   * give the one back soonest, and every request sent to the group would fail on it) unless every
   * group's are: then the first pair found, as a pick among ejected pods does.
   */
  private pickPair(): boolean {
    const pd = this.pd;
    const skip = this.skipDecode;
    /** Decode pods passed over for this pick only (their group's prefill pods all ejected): made when one is met. */
    let passed: EndpointState[] | null = null;
    let fallback: { d: EndpointState; p: EndpointState; decodeAt: number; prefillAt: number } | null = null;
    let found = false;
    for (;;) {
      const d = this.scheduler.pickAmong(pd.decode, skip.length === 0 ? null : skip, this.prompt);
      if (d === null) break;
      const decodeAt = this.scheduler.pickedAt;
      // The prompt's prefix is remembered for the decode pod alone (the prefix memory keeps one pod
      // per block): a request sharing it comes back to the same group, whose prefill pod holds it.
      const p = this.scheduler.pickAmong(pd.prefillOf.get(d)!, this.skipPrefill.length === 0 ? null : this.skipPrefill, null);
      if (p !== null && !this.scheduler.isEjected(p)) {
        this.setPair(d, p, decodeAt, this.scheduler.pickedAt);
        found = true;
        break;
      }
      if (p !== null) {
        fallback ??= { d, p, decodeAt, prefillAt: this.scheduler.pickedAt };
        (passed ??= []).push(d);
      }
      // No prefill pod left to try in its group: passed over for good.
      skip.push(d);
    }
    if (passed !== null) {
      let n = 0;
      for (let i = 0; i < skip.length; i++) if (!passed.includes(skip[i])) skip[n++] = skip[i];
      skip.length = n;
    }
    if (found) return true;
    if (fallback === null) return false;
    this.setPair(fallback.d, fallback.p, fallback.decodeAt, fallback.prefillAt);
    return true;
  }

  private setPair(d: EndpointState, p: EndpointState, decodeAt: number, prefillAt: number): void {
    this.decode = d;
    this.prefill = p;
    this.decodeSentAt = decodeAt;
    this.prefillSentAt = prefillAt;
  }

  protected afterInterval(): void {
    try {
      if (!this.x.writable) this.succeeded(null);
      else this.send();
    } catch (err) {
      this.caught(err);
    }
  }

  private sendPrefill(): void {
    const x = this.x;
    const ctx = x.ctx;
    ctx.selectedPod = this.decode!.name;
    ctx.prefillPod = this.prefill!.name;
    if (this.span !== null) this.span.pod = this.decode!.origin;
    // The record's upstream time is the attempt's: its prefill and its decode.
    ctx.tUpstreamStart = this.prefillStart = performance.now();
    ctx.tUpstreamEnd = 0;
    // The decode pod has this request from now on, for the scorers (in flight): the picks made
    // while its prefill runs would otherwise all see the same idle pod (released in afterPrefill).
    this.decode!.begin();
    this.decodeReserved = true;
    const call = new PrefillCall(this.prefill!, this);
    x.upstream = call;
    try {
      call.send(x, this.prefillBody, this.server.timeoutMs);
    } catch (err) {
      this.decodeReserved = false;
      this.decode!.end();
      throw err;
    }
  }

  /** SGLang: the prefill and the decode request of the attempt, together, sharing a new bootstrap room. */
  private sendSglang(): void {
    const x = this.x;
    const ctx = x.ctx;
    const d = this.decode!;
    const p = this.prefill!;
    ctx.selectedPod = d.name;
    ctx.prefillPod = p.name;
    if (this.span !== null) this.span.pod = d.origin;
    const room = newBootstrapRoom();
    const model = this.server.model;
    const prefillBody = this.bodies.sglangPrefillBody(x.body, this.req, model, room);
    const up = this.bodies.sglangDecodeBody(x.body, this.req, model, room, p.host);
    this.sgPrefillOutcome = null;
    this.prefillStart = this.decodeStart = performance.now();
    const prefill = new PrefillCall(p, this);
    this.sgPrefill = prefill;
    prefill.send(x, prefillBody, this.server.timeoutMs);
    try {
      // The decode call is the exchange's upstream: a client that leaves cuts it, and its end cuts the prefill.
      this.sgDecode = startUpstreamCall(x, this.api, this.tokens, d, up, this.req.stream, this.server.timeoutMs, this);
    } catch (err) {
      this.cutPrefill(new Error('the decode request could not be sent'));
      this.attemptFailed(err);
    }
  }

  private cutPrefill(reason: Error): void {
    const call = this.sgPrefill;
    if (call === null) return;
    this.sgPrefill = null;
    call.abort(reason);
  }

  /** The prefill call ended (PrefillListener). */
  prefillEnded(call: PrefillCall): void {
    try {
      if (this.pd.sglang) this.sglangPrefillEnded(call);
      else this.afterPrefill(call);
    } catch (err) {
      this.caught(err);
    }
  }

  private afterPrefill(call: PrefillCall): void {
    // The decode call, if one follows, counts itself in flight.
    if (this.decodeReserved) {
      this.decodeReserved = false;
      this.decode!.end();
    }
    const x = this.x;
    const p = call.endpoint;
    if (x.upstream === call) x.upstream = null;
    const err = call.error;
    if (err instanceof ClientGone || !x.writable) {
      if (call.status !== 0 || (err !== null && !call.notReached)) x.reachedPod = true;
      this.succeeded(null); // the client left: nothing to answer
      return;
    }
    if (err !== null && call.notReached) {
      this.prefillNotReached(p, this.notReachedError(p, err));
      return;
    }
    x.reachedPod = true;
    if (err !== null) {
      this.prefillFailed(p, this.prefillFault(p, err));
      return;
    }
    const status = call.status;
    // A 503 with retry-after: the pod is overloaded, not broken (not counted); its answer is the client's.
    this.scheduler.answered(p, performance.now() - this.prefillStart, status, call.retryAfter, this.prefillSentAt);
    if (status >= 500 && !call.retryAfter) {
      this.prefillFailed(p, new RouterError('upstream_error', `prefill pod ${p.name} answered ${status}`, 502, null, 'prefill_failed'));
      return;
    }
    if (status < 200 || status >= 300) {
      // The pod refused the request itself (a prompt too long, a bad parameter): its answer is the client's.
      x.upstreamEnded();
      x.recordError(errorTypeOfUpstreamStatus(status), `prefill pod ${p.name} answered ${status}`, status);
      x.endBuffered(status, call.headers, call.body!, call.headAscii);
      this.succeeded(null);
      return;
    }
    let kvParams: Buffer | null = null;
    if (this.pd.kvTransfer) {
      kvParams = this.bodies.kvTransferParams(call.body!);
      if (kvParams === null) {
        this.prefillFailed(p, new RouterError('upstream_error', `prefill pod ${p.name} answered ${status} with a body that is not a JSON object, so it has no kv_transfer_params`, 502, null, 'prefill_failed'));
        return;
      }
    }
    this.sendDecode(kvParams);
  }

  /**
   * SGLang: the prefill ended, the decode running or done. Its answer is dropped. Failed before the
   * decode answer started: the decode is cut, and the attempt fails once it ended; after: the
   * decode answer goes on (the prefill pod's fault is counted).
   */
  private sglangPrefillEnded(call: PrefillCall): void {
    if (call !== this.sgPrefill) return; // cut by the router (the decode failed, or the client left)
    this.sgPrefill = null;
    const p = call.endpoint;
    const err = call.error;
    if (err instanceof ClientGone) return;
    let outcome: (() => void) | null = null;
    if (err !== null && call.notReached) {
      const e = this.notReachedError(p, err);
      outcome = () => this.prefillNotReached(p, e);
    } else if (err !== null) {
      const e = this.prefillFault(p, err);
      outcome = () => this.prefillFailed(p, e);
    } else {
      const status = call.status;
      this.scheduler.answered(p, performance.now() - this.prefillStart, status, call.retryAfter, this.prefillSentAt);
      if (status >= 500 && !call.retryAfter) {
        outcome = () => this.prefillFailed(p, new RouterError('upstream_error', `prefill pod ${p.name} answered ${status}`, 502, null, 'prefill_failed'));
      } else if (status < 200 || status >= 300) {
        // The pod refused the request itself (a prompt too long, a bad parameter): its answer is the client's.
        outcome = () => {
          const x = this.x;
          x.recordError(errorTypeOfUpstreamStatus(status), `prefill pod ${p.name} answered ${status}`, status);
          x.endBuffered(status, call.headers, call.body!, call.headAscii);
          this.succeeded(null);
        };
      }
    }
    const decode = this.sgDecode;
    if (outcome === null || this.ended || decode === null || this.x.headersSent) return;
    this.sgPrefillOutcome = outcome;
    decode.abort(new PrefillEnded(`the prefill on pod ${p.name} failed`));
  }

  /**
   * The error of a prefill pod that was not reached: the router's own refusal to send (notSent), or
   * a connection that failed, which counts against the pod.
   */
  private notReachedError(p: EndpointState, err: Error): RouterError {
    if (isOwnRefusal(err)) return notSent(err, `${p.name} (prefill)`);
    this.scheduler.connectFailed(p);
    return new RouterError('upstream_error', `cannot connect to prefill pod ${p.name}: ${codeOf(err)}${err.message}`, 502, null, 'upstream_unreachable');
  }

  /** The error of a prefill pod that had the request and failed it (its fault counted for passive health). */
  private prefillFault(p: EndpointState, err: Error): RouterError {
    return countPodFault(this.scheduler, p, err) === PodFault.Timeout
      ? new RouterError('timeout', `the prefill on pod ${p.name} timed out after ${formatSeconds(this.server.timeoutMs)}s`)
      : new RouterError('upstream_error', `the prefill failed on pod ${p.name}: ${codeOf(err)}${err.message}`, 502, null, 'prefill_failed');
  }

  /** The prefill pod was not reached: another pair (always), else the error. */
  private prefillNotReached(p: EndpointState, err: RouterError): void {
    this.lastError = err;
    this.skipPrefill.push(p);
    this.retryOrEnd(true);
  }

  /** The prefill pod had the request and failed it: another pair with the retry policy, else the error. */
  private prefillFailed(p: EndpointState, err: RouterError): void {
    this.skipPrefill.push(p);
    const retry = this.server.retry;
    if (!retry.anyFailure || this.attempt >= retry.attempts || !this.x.writable) {
      this.failed(err);
      return;
    }
    this.lastError = err;
    this.attempt++;
    this.next();
  }

  private sendDecode(kvParams: Buffer | null): void {
    const d = this.decode!;
    const x = this.x;
    try {
      const up = this.bodies.decodeBody(x.body, this.req, this.server.model, kvParams);
      const started = x.ctx.tUpstreamStart;
      this.decodeStart = performance.now();
      startUpstreamCall(x, this.api, this.tokens, d, up, this.req.stream, this.server.timeoutMs, this);
      x.ctx.tUpstreamStart = started;
    } catch (err) {
      this.attemptFailed(err);
    }
  }

  /** The decode call ended (CallListener). */
  callEnded(call: UpstreamCall, outcome: CallOutcome): void {
    try {
      this.decodeEnded(call, outcome);
    } catch (err) {
      this.caught(err);
    }
  }

  private decodeEnded(call: UpstreamCall, outcome: CallOutcome): void {
    const d = this.decode!;
    if (this.pd.sglang) {
      this.sgDecode = null;
      const afterPrefill = this.sgPrefillOutcome;
      if (afterPrefill !== null && call.error instanceof PrefillEnded) {
        // Cut because its prefill failed: the attempt ends as the prefill's failure.
        this.sgPrefillOutcome = null;
        try {
          upstreamResult(this.x, call, outcome, d, this.server.timeoutMs);
        } catch {
          // The decode's own error is not the client's: the prefill's is.
        }
        afterPrefill();
        return;
      }
      // A decode that did not answer in full cancels its prefill, as the route API's router does.
      if (outcome !== CallOutcome.Done || call.upstreamStatus >= 300 || this.x.ctx.aborted) this.cutPrefill(new Error('the decode request failed'));
    }
    if (outcome === CallOutcome.FailedBeforeResponse || outcome === CallOutcome.FailedMidResponse) {
      countPodFault(this.scheduler, d, call.error);
    }
    let r: AnswerUsage | null | 'retry';
    try {
      r = upstreamResult(this.x, call, outcome, d, this.server.timeoutMs);
    } catch (err) {
      this.attemptFailed(err);
      return;
    }
    if (r !== 'retry') {
      const ctx = this.x.ctx;
      if (outcome === CallOutcome.Done && !ctx.aborted) {
        const to = ctx.tFirstByte > this.decodeStart ? ctx.tFirstByte : ctx.tUpstreamEnd;
        this.scheduler.answered(d, to - this.decodeStart, call.upstreamStatus, call.retryAfter, this.decodeSentAt);
      }
      this.succeeded(r);
      return;
    }
    if (isOwnRefusal(call.error)) {
      this.lastError = notSent(call.error, `${d.name} (decode)`);
    } else {
      this.scheduler.connectFailed(d);
      this.lastError = upstreamFailure(call.error, this.server.timeoutMs, `${d.name} (decode)`);
    }
    this.skipDecode.push(d);
    this.retryOrEnd(true);
  }

  /** A pod was not reached: another pair while attempts are left. */
  private retryOrEnd(notReached: boolean): void {
    if (!notReached || this.attempt >= this.server.retry.attempts || !this.x.writable) {
      this.exhausted();
      return;
    }
    this.attempt++;
    this.next();
  }

  /** The decode attempt failed with `err` (thrown by the call's start or by its result). */
  private attemptFailed(err: unknown): void {
    const retry = this.server.retry;
    if (!retry.anyFailure || this.attempt >= retry.attempts || !(err instanceof RouterError) || this.x.headersSent || !this.x.writable) {
      this.failed(err);
      return;
    }
    this.skipDecode.push(this.decode!);
    this.lastError = err;
    this.attempt++;
    this.next();
  }

  private exhausted(): void {
    this.failed(this.lastError ?? new RouterError('upstream_error', `cannot connect to any prefill/decode pair of ModelServer ${this.server.key}`, 502, null, 'upstream_unreachable'));
  }
}

function codeOf(err: Error): string {
  const code = (err as { code?: string }).code;
  return code ? `${code} ` : '';
}
