/**
 * What the attempts of one request share, whether a pod answers alone (proxy-with-retries.ts) or a
 * prefill and a decode pod answer together (proxy-disaggregated.ts): the caller hears the end
 * once, and a pod that had the request and failed it counts for passive health.
 */
import type { AnswerUsage } from '../api/inference-api.js';
import type { Exchange } from '../http/exchange.js';
import type { EndpointState } from '../upstream/endpoint-registry.js';
import { PodFault, podFault } from '../upstream/upstream-errors.js';
import type { Scheduler } from './scheduler.js';

/** What the caller of the attempts hears, once: the answer went through, or none could be had. */
export interface ProxyListener {
  /** The answer went through to the client (or the client left): the usage seen, null when none. */
  proxied(usage: AnswerUsage | null): void;
  /** No pod gave an answer the client could get: the error to answer (a RouterError, or a bug's error). */
  proxyFailed(err: unknown): void;
}

/** The end of a request's attempts, told to its listener once. */
export abstract class AttemptsEnd {
  /** The listener heard the end. */
  protected ended = false;
  /** The retry interval's timer, while the next attempt waits for it (waitInterval). */
  private interval: NodeJS.Timeout | null = null;
  /** The exchange whose upstream the attempts are while they wait out the interval. */
  private exchange: Exchange | null = null;

  constructor(protected readonly listener: ProxyListener) {}

  /**
   * The next attempt waits `ms` (the ModelServer's retryInterval), then `afterInterval()` runs. The
   * attempts are the exchange's upstream meanwhile: a client that leaves ends the wait at once
   * (abortForClient), so its request is recorded then, and no pod is tried after.
   */
  protected waitInterval(x: Exchange, ms: number): void {
    // The attempts as the timer's argument: no closure per request.
    this.interval = setTimeout(intervalEnded, ms, this);
    x.upstream = this;
    this.exchange = x;
  }

  /** The retry interval's timer fired (intervalEnded). */
  endInterval(): void {
    this.interval = null;
    if (this.exchange !== null && this.exchange.upstream === this) this.exchange.upstream = null;
    this.exchange = null;
    this.afterInterval();
  }

  /** The interval is over: the next attempt (or the end, when the client left). */
  protected abstract afterInterval(): void;

  /** The client left during the retry interval (the exchange's `upstream` then): no attempt is made. */
  abortForClient(): void {
    if (this.interval === null) return;
    clearTimeout(this.interval);
    this.interval = null;
    if (this.exchange !== null && this.exchange.upstream === this) this.exchange.upstream = null;
    this.exchange = null;
    try {
      this.succeeded(null);
    } catch (err) {
      this.caught(err);
    }
  }

  /** StreamSource, while no call runs (the interval): nothing is read to pause. */
  pause(): void {}

  resume(): void {}

  /**
   * An error thrown in the attempts' own steps (a bug) ends the request with it, answered as the
   * internal error it is. One the listener threw, or one thrown after the end, is not the attempts'
   * to answer: it goes on up (to the call's microtask or the pipeline), not swallowed.
   */
  protected caught(err: unknown): void {
    if (this.ended) throw err;
    this.failed(err);
  }

  protected succeeded(usage: AnswerUsage | null): void {
    if (this.ended) return;
    this.ended = true;
    this.listener.proxied(usage);
  }

  protected failed(err: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.listener.proxyFailed(err);
  }
}

function intervalEnded(attempts: AttemptsEnd): void {
  attempts.endInterval();
}

/** A pod that had the request failed it with `err`: a timeout or a lost connection counts for its passive health. Gives the fault. */
export function countPodFault(scheduler: Scheduler, endpoint: EndpointState, err: unknown): PodFault {
  const fault = podFault(err);
  if (fault === PodFault.Timeout) scheduler.timedOut(endpoint);
  else if (fault === PodFault.Lost) scheduler.lost(endpoint);
  return fault;
}
