/**
 * Fair queueing in front of a ModelServer (docs/scheduling.md#fair-queueing): at most `limit`
 * requests of this worker in flight to the server; the others wait, and when one ends the
 * tenant that used the server least within the window (weighted tokens: tenant-usage.ts) goes
 * next, a tenant's own requests in the order they came. A request waits at most `timeoutMs`, and
 * at most `maxWaiting` wait; its client leaving takes it out of the queue.
 */
import type { Clock } from '../clock.js';
import type { Timers } from '../timers.js';
import type { FairnessSettings } from './fairness-settings.js';
import { TenantUsage } from './tenant-usage.js';

/** A request that waits: told once, by granted(), timedOut() or stopped() (or taken out by FairGate.leave). */
export interface FairWaiter {
  /** Its turn came: it holds a place in flight from now on (release it once). */
  granted(): void;
  /** It waited `timeoutMs` without its turn coming. */
  timedOut(): void;
  /** The router is stopping (its drain timed out): it will not go. */
  stopped(): void;
}

/** One waiting request. */
interface Waiting {
  readonly waiter: FairWaiter;
  readonly tenant: string;
  /** Its prompt's tokens: the tenant's use once it goes. */
  readonly input: number;
  readonly since: number;
  timer: unknown;
}

/** What a gate reports of a wait that ended (metrics): the server, and how long it waited (ms). */
export type WaitListener = (server: string, waitedMs: number) => void;

export class FairGate {
  private inFlight = 0;
  private waitingCount = 0;
  /** Waiting requests by tenant, each list in arrival order; a tenant is here only while it has some. */
  private readonly waiting = new Map<string, Waiting[]>();
  private readonly usage: TenantUsage;
  /** next() is running (a request it let go released its place at once). */
  private granting = false;

  constructor(
    readonly server: string,
    private readonly limit: number,
    private readonly maxWaiting: number,
    readonly timeoutMs: number,
    private readonly weights: { readonly input: number; readonly output: number; readonly request: number },
    windowMs: number,
    private readonly clock: Clock,
    private readonly timers: Timers,
    private readonly onWaitEnded: WaitListener | null,
  ) {
    this.usage = new TenantUsage(windowMs, clock);
  }

  /** Requests of this worker waiting for the server. */
  get queued(): number {
    return this.waitingCount;
  }

  get active(): number {
    return this.inFlight;
  }

  /**
   * A request of `tenant` wants to go to the server, its prompt `inputTokens` long: 'go' (it
   * holds a place now), 'wait' (queued: `waiter` hears later) or 'full' (the queue is at its bound).
   * Its input (and the weight of a request) counts as the tenant's use from the moment it goes.
   */
  enter(waiter: FairWaiter, tenant: string, inputTokens: number): 'go' | 'wait' | 'full' {
    if (this.inFlight < this.limit && this.waitingCount === 0) {
      this.inFlight++;
      this.usage.add(tenant, inputTokens * this.weights.input + this.weights.request);
      return 'go';
    }
    if (this.waitingCount >= this.maxWaiting) return 'full';
    const w: Waiting = { waiter, tenant, input: inputTokens, since: this.clock(), timer: null };
    w.timer = this.timers.setTimeout(() => this.expire(w), this.timeoutMs);
    let list = this.waiting.get(tenant);
    if (list === undefined) {
      list = [];
      this.waiting.set(tenant, list);
    }
    list.push(w);
    this.waitingCount++;
    return 'wait';
  }

  /** A request that went ends (its answer is over, or it failed): its output counts, and the next may go. */
  release(tenant: string, outputTokens: number): void {
    this.usage.add(tenant, outputTokens * this.weights.output);
    this.inFlight--;
    this.next();
  }

  /** A waiting request whose client left: out of the queue, without its turn. */
  leave(waiter: FairWaiter): void {
    for (const [tenant, list] of this.waiting) {
      const i = list.findIndex((w) => w.waiter === waiter);
      if (i < 0) continue;
      this.remove(tenant, list, i);
      return;
    }
  }

  /** Every waiting request is told it will not go (the router stops), and leaves the queue. */
  cutWaiting(): void {
    for (const [tenant, list] of this.waiting) {
      while (list.length > 0) {
        const w = list[0];
        this.remove(tenant, list, 0);
        w.waiter.stopped();
      }
    }
  }

  /**
   * Lets waiting requests go while there is room: each time, the head of the least-used tenant's
   * list. A request that fails as it goes (no pod ready) releases its place from inside granted():
   * the loop already running takes the next, instead of a call deeper per request.
   */
  private next(): void {
    if (this.granting) return;
    this.granting = true;
    try {
      this.grantWhileRoom();
    } finally {
      this.granting = false;
    }
  }

  private grantWhileRoom(): void {
    while (this.inFlight < this.limit && this.waitingCount > 0) {
      let bestTenant = '';
      let best: Waiting[] | null = null;
      let bestUse = 0;
      for (const [tenant, list] of this.waiting) {
        const use = this.usage.used(tenant);
        if (best === null || use < bestUse || (use === bestUse && list[0].since < best[0].since)) {
          best = list;
          bestUse = use;
          bestTenant = tenant;
        }
      }
      const w = best![0];
      this.remove(bestTenant, best!, 0);
      this.inFlight++;
      this.usage.add(w.tenant, w.input * this.weights.input + this.weights.request);
      this.onWaitEnded?.(this.server, this.clock() - w.since);
      w.waiter.granted();
    }
  }

  private expire(w: Waiting): void {
    const list = this.waiting.get(w.tenant);
    const i = list === undefined ? -1 : list.indexOf(w);
    if (i < 0) return;
    w.timer = null;
    this.remove(w.tenant, list!, i);
    this.onWaitEnded?.(this.server, this.clock() - w.since);
    w.waiter.timedOut();
  }

  private remove(tenant: string, list: Waiting[], i: number): void {
    const w = list[i];
    list.splice(i, 1);
    if (list.length === 0) this.waiting.delete(tenant);
    this.waitingCount--;
    if (w.timer !== null) {
      this.timers.clearTimeout(w.timer);
      w.timer = null;
    }
  }
}

/** The gates of a worker, one per ModelServer (by key), made at a server's first request. */
export class FairGates {
  private readonly gates = new Map<string, FairGate>();

  constructor(
    private readonly settings: FairnessSettings,
    /** The worker's share of `settings.maxConcurrent` and `settings.maxQueued` (1 / number of workers). */
    private readonly workers: number,
    private readonly clock: Clock,
    private readonly timers: Timers,
    private readonly onWaitEnded: WaitListener | null = null,
  ) {}

  of(server: string): FairGate {
    let g = this.gates.get(server);
    if (g === undefined) {
      const s = this.settings;
      g = new FairGate(server, Math.max(1, Math.ceil(s.maxConcurrent / this.workers)), Math.max(1, Math.ceil(s.maxQueued / this.workers)),
        s.queueTimeoutMs, { input: s.inputTokenWeight, output: s.outputTokenWeight, request: s.requestWeight }, s.windowMs, this.clock, this.timers, this.onWaitEnded);
      this.gates.set(server, g);
    }
    return g;
  }

  /**
   * Drops the gates of servers `kept` says are gone, those with nothing in flight or waiting (a
   * busy one stays until a later configuration finds it idle); its tenants' use goes with it.
   */
  forgetIdle(kept: (server: string) => boolean): void {
    for (const [server, g] of this.gates) if (!kept(server) && g.active === 0 && g.queued === 0) this.gates.delete(server);
  }

  /** The router stops: every waiting request of every server is told it will not go. */
  cutWaiting(): void {
    for (const g of this.gates.values()) g.cutWaiting();
  }

  /** Each server's requests waiting in this worker (metrics). */
  queued(): Map<string, number> {
    const out = new Map<string, number>();
    for (const [server, g] of this.gates) out.set(server, g.queued);
    return out;
  }
}
