import type { LimiterClient } from './connection.js';
import { awaitReply, type ReplyHandlers } from './late-reply.js';
import { failureHint } from './failure-hint.js';

/** starting: never connected yet; up: commands go to Redis; down: circuit open, no request waits. */
export type StoreState = 'starting' | 'up' | 'down';

export interface HealthOptions {
  /** Shown in log lines (credentials already hidden). */
  name: string;
  /** Failure mode, for log lines. */
  failureMode: string;
  /** Connections use TLS (for what log lines suggest). */
  tls?: boolean;
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
  /** Called at each error of the connection (one per failed connection attempt while Redis cannot be reached). */
  onConnectionError?: () => void;
}

/**
 * Circuit breaker of one Redis client. A failed or timed-out command, or a lost connection,
 * opens it (logged once per outage); while open, requests do not touch Redis at all. The
 * client reconnects by itself; `ready` or a successful background PING closes the circuit again.
 *
 * A Redis that answers the limiter's script with an error (`refused`: OOM at maxmemory, an ACL
 * refusing a command the script calls) still answers PING: the circuit then closes after the probe
 * interval, lets calls try again, and opens on the next refusal, but that is one outage in the log,
 * over only once a script call answers (answered()), not a pair of lines at every try.
 */
export class StoreHealth {
  private current: StoreState = 'starting';
  private readonly client: LimiterClient;
  private readonly opts: HealthOptions;
  private startupWaiters: (() => void)[] = [];
  private probeTimer: NodeJS.Timeout | null = null;
  private probing = false;
  private closed = false;
  /** The circuit last opened on an error Redis answered (refused): a PING answering does not end the outage. */
  private refused = false;
  /** Closed by a PING after a refusal: the outage is over (logged) once a script call answers. */
  private unconfirmed = false;

  constructor(client: LimiterClient, opts: HealthOptions) {
    this.client = client;
    this.opts = opts;
    client.on('ready', () => this.markUp());
    client.on('close', () => this.markDown('connection closed'));
    // Also keeps ioredis from printing "Unhandled error event" for every reconnect attempt.
    client.on('error', (err: Error) => {
      if (this.opts.onConnectionError !== undefined && !this.closed) this.opts.onConnectionError();
      this.markDown(err.message);
    });
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

  /**
   * A command failed or timed out, or the connection dropped: open the circuit. `refused`: Redis
   * answered the command with an error (it is reachable, and answers PING).
   */
  markDown(reason: string, refused = false): void {
    if (this.closed || this.current === 'down') return;
    const atStart = this.current === 'starting';
    this.current = 'down';
    this.releaseStartupWaiters();
    if (this.opts.onDown !== undefined) this.opts.onDown();
    // Still the outage logged before: a PING answered since, no script call did.
    const same = this.unconfirmed;
    this.unconfirmed = false;
    this.refused = refused;
    if (!same) {
      const { name, failureMode } = this.opts;
      const hint = failureHint(reason, this.opts.tls === true);
      this.opts.log(
        (atStart
          ? `rate limit store ${name} is unreachable at start (${reason}); failure mode "${failureMode}" applies until it answers`
          : `rate limit store ${name} is unavailable (${reason}); failure mode "${failureMode}" applies until it answers again`) +
        (hint === null ? '' : `; ${hint}`),
        'warn',
      );
    }
    // The first ping goes out at once: a failure caused by a stall of this process (event loop
    // lag past the timeout) rather than by Redis then costs one round trip, not a probe interval.
    // Not after a refusal: the PING would answer at once, and the next call be refused again.
    this.scheduleProbe(refused ? this.opts.probeIntervalMs : 0);
  }

  /** A script call answered: an outage whose circuit a PING closed after a refusal is over. */
  answered(): void {
    if (!this.unconfirmed) return;
    this.unconfirmed = false;
    this.refused = false;
    this.opts.log(`rate limit store ${this.opts.name} is available again; global limits are enforced`);
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
    // After a refusal, PING answering says nothing of the scripts: logged when one answers (answered()).
    if (wasDown && this.refused) this.unconfirmed = true;
    else if (wasDown) this.opts.log(`rate limit store ${this.opts.name} is available again; global limits are enforced`);
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
