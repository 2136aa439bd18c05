import type { LimiterClient } from './connection.js';
import { awaitReply, type ReplyHandlers } from './late-reply.js';

/** starting: never connected yet; up: commands go to Redis; down: circuit open, no request waits. */
export type StoreState = 'starting' | 'up' | 'down';

export interface HealthOptions {
  /** Shown in log lines (credentials already hidden). */
  name: string;
  /** Failure mode, for log lines. */
  failureMode: string;
  /** The longest a request may wait for the first connection, and a health PING for its answer. */
  timeoutMs: number;
  /** Delay between health pings while the circuit is open. */
  probeIntervalMs: number;
  /** `warn` for the store going down (unreachable at start, unavailable later). */
  log: (message: string, level?: 'warn') => void;
  /** Called each time the circuit opens (a failed or timed-out command, a lost connection). */
  onDown?: () => void;
  /** Called each time the circuit closes (the first connection too). */
  onUp?: () => void;
}

/**
 * Circuit breaker of one Redis client. A failed or timed-out command, or a lost connection,
 * opens it (logged once per outage); while open, requests do not touch Redis at all. The
 * client reconnects by itself; `ready` or a successful background PING closes the circuit again.
 */
export class StoreHealth {
  private current: StoreState = 'starting';
  private readonly client: LimiterClient;
  private readonly opts: HealthOptions;
  private startupWaiters: (() => void)[] = [];
  private probeTimer: NodeJS.Timeout | null = null;
  private probing = false;
  private closed = false;

  constructor(client: LimiterClient, opts: HealthOptions) {
    this.client = client;
    this.opts = opts;
    client.on('ready', () => this.markUp());
    client.on('close', () => this.markDown('connection closed'));
    // Also keeps ioredis from printing "Unhandled error event" for every reconnect attempt.
    client.on('error', (err: Error) => this.markDown(err.message));
  }

  get state(): StoreState {
    return this.current;
  }

  /**
   * While still starting, resolves when the first connection succeeds or fails, or after the
   * request timeout, whichever comes first; null when there is nothing to wait for.
   */
  startupSettled(): Promise<void> | null {
    if (this.current !== 'starting') return null;
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, this.opts.timeoutMs);
      this.startupWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** A command failed or timed out, or the connection dropped: open the circuit. */
  markDown(reason: string): void {
    if (this.closed || this.current === 'down') return;
    const atStart = this.current === 'starting';
    this.current = 'down';
    this.releaseStartupWaiters();
    if (this.opts.onDown !== undefined) this.opts.onDown();
    const { name, failureMode } = this.opts;
    this.opts.log(
      atStart
        ? `rate limit store ${name} is unreachable at start (${reason}); failure mode "${failureMode}" applies until it answers`
        : `rate limit store ${name} is unavailable (${reason}); failure mode "${failureMode}" applies until it answers again`,
      'warn',
    );
    // The first ping goes out at once: a failure caused by a stall of this process (event loop
    // lag past the timeout) rather than by Redis then costs one round trip, not a probe interval.
    this.scheduleProbe(0);
  }

  markUp(): void {
    if (this.closed || this.current === 'up') return;
    const wasDown = this.current === 'down';
    this.current = 'up';
    this.releaseStartupWaiters();
    if (this.probeTimer !== null) {
      clearTimeout(this.probeTimer);
      this.probeTimer = null;
    }
    if (wasDown) this.opts.log(`rate limit store ${this.opts.name} is available again; global limits are enforced`);
    if (this.opts.onUp !== undefined) this.opts.onUp();
  }

  close(): void {
    this.closed = true;
    this.releaseStartupWaiters();
    if (this.probeTimer !== null) clearTimeout(this.probeTimer);
    this.probeTimer = null;
  }

  private releaseStartupWaiters(): void {
    const waiters = this.startupWaiters;
    if (waiters.length === 0) return;
    this.startupWaiters = [];
    for (const w of waiters) w();
  }

  private scheduleProbe(delayMs = this.opts.probeIntervalMs): void {
    if (this.closed || this.probeTimer !== null || this.probing) return;
    this.probeTimer = setTimeout(this.probe, delayMs);
    this.probeTimer.unref();
  }

  private readonly probe = (): void => {
    this.probeTimer = null;
    if (this.closed || this.current !== 'down') return;
    if (this.client.status !== 'ready') {
      this.scheduleProbe();
      return;
    }
    this.probing = true;
    // Bounded by the timeout here: the client itself keeps a command longer (late-reply.ts). A
    // PONG that comes after it still closes the circuit.
    awaitReply(this.client.ping(), this.opts.timeoutMs, this.probeReply);
  };

  private readonly probeReply: ReplyHandlers<string> = {
    reply: () => {
      this.probing = false;
      this.markUp();
    },
    fail: () => {
      this.probing = false;
      this.scheduleProbe();
    },
    late: () => this.markUp(),
  };
}
