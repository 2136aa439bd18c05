import { startTicking, stopTicking, type Ticking } from '../interval-ticker.js';
import type { LevelledLog } from '../observe/ops-log.js';
import { performance } from 'node:perf_hooks';

/**
 * A worker's view of whether its primary answers. Any message from the primary shows that its
 * event loop runs (`heard()`): the pod-load share comes every second, lease reports' answers more
 * often under load. Each `everyMs` tick the worker sends a `core:ping` (answered by `core:pong`)
 * only when it has heard nothing for `quietMs` (1.5 × everyMs by default), so a primary that
 * speaks anyway is not woken for a ping and its answer does not wake the worker. When nothing
 * came for `boundMs` (the primary's loop is stalled, so limits over IPC and metrics scrapes
 * fail), `alive()` is false and /readyz answers 503 until something comes. Transitions are
 * logged once each. The tick shares the process's timer of its period (interval-ticker.ts): with
 * the pod-load report at the same period, an idle worker wakes once a second for both.
 */
export interface HeartbeatOptions {
  readonly everyMs: number;
  /** Silence after which a tick pings (default 1.5 × everyMs); under boundMs − everyMs, so a live primary's pong comes in time. */
  readonly quietMs?: number;
  readonly boundMs: number;
  readonly ping: () => void;
  /** A `warn` when the primary stops answering, an `info` when it answers again. */
  readonly log: LevelledLog;
  readonly now?: () => number;
}

export class PrimaryHeartbeat implements Ticking {
  private readonly o: HeartbeatOptions;
  private readonly now: () => number;
  private readonly quietMs: number;
  private lastHeard: number;
  private stale = false;

  constructor(opts: HeartbeatOptions) {
    this.o = opts;
    this.now = opts.now ?? (() => performance.now());
    this.quietMs = opts.quietMs ?? 1.5 * opts.everyMs;
    this.lastHeard = this.now();
  }

  start(): void {
    this.lastHeard = this.now();
    startTicking(this, this.o.everyMs);
    this.o.ping();
  }

  /** Stops the ticks (nothing when not started). */
  stop(): void {
    stopTicking(this, this.o.everyMs);
  }

  /** A message from the primary (a pong or anything else) came. */
  heard(): void {
    this.lastHeard = this.now();
    if (this.stale) {
      this.stale = false;
      this.o.log('info', 'the primary answers again; readiness restored');
    }
  }

  /** Whether the primary was heard from within the bound (checked by /readyz and each tick; logs the change). */
  alive(): boolean {
    const silentMs = this.now() - this.lastHeard;
    if (silentMs <= this.o.boundMs) return true;
    if (!this.stale) {
      this.stale = true;
      this.o.log('warn', `the primary has not answered a heartbeat for ${Math.round(silentMs)} ms; /readyz answers 503 until it does`);
    }
    return false;
  }

  /** One tick of the heartbeat's period (called by the shared timer). */
  advance(): void {
    this.alive();
    if (this.now() - this.lastHeard >= this.quietMs) this.o.ping();
  }
}
