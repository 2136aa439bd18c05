import type { LimiterClient } from './connection.js';
import { awaitReply, type ReplyHandlers } from './late-reply.js';
import { failureHint } from './failure-hint.js';

/** starting: never connected yet; up: commands go to Redis; down: circuit open, no request waits. */
export type StoreState = 'starting' | 'up' | 'down';

/** ioredis's messages for a command on a connection that is gone (no offline queue: it fails at once). */
const CLIENT_CLOSED = /^Stream isn't writeable|^Connection is closed\.?$/;

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
  /** `warn` for the store going down (unreachable at start, unavailable later), `error` for a refusal of the check. */
  log: (message: string, level?: 'warn' | 'error') => void;
  /**
   * Asked before the circuit closes (at each connection, and when a health PING answers): null
   * when the store may be used, else the line saying why not (logged as an `error`; the circuit
   * stays open, and the next probe asks again). A rejection, or no answer within the timeout,
   * counts as a failed command.
   */
  check?: () => Promise<string | null>;
  /** Called each time the check refuses or fails. */
  onCheckError?: () => void;
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
 *
 * With a `check`, the circuit closes only once it passes: the connection's `ready` or a PING that
 * answers asks it first; a refusal keeps the circuit open (one `error` line per outage, unless
 * what it says changes) and the probe asks again every probe interval.
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
  /** The refusal of this outage was the check's: the check passing ends it (no script call needed). */
  private refusedByCheck = false;
  /** The check under way is this one (an older one's answer is ignored); raised when the circuit opens. */
  private checks = 0;
  /** The line the check's refusal last logged in this outage, or null. */
  private refusal: string | null = null;

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
   * Redis decides admissions now: the circuit is closed and, after a refusal, a script call has
   * answered since (a PING answering only lets calls try again).
   */
  get decides(): boolean {
    return this.current === 'up' && !this.unconfirmed;
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
    // A check under way answers for a connection that failed since.
    this.checks++;
    if (this.closed || this.current === 'down') return;
    this.open(refused, this.downLine(reason), 'warn');
  }

  private downLine(reason: string): string {
    const { name, failureMode } = this.opts;
    // A command sent as the connection went down fails with the client's own words for it.
    if (CLIENT_CLOSED.test(reason)) reason = 'connection closed';
    const hint = failureHint(reason, this.opts.tls === true);
    return (this.current === 'starting'
      ? `rate limit store ${name} is unreachable at start (${reason}); failure mode "${failureMode}" applies until it answers`
      : `rate limit store ${name} is unavailable (${reason}); failure mode "${failureMode}" applies until it answers again`) +
      (hint === null ? '' : `; ${hint}`);
  }

  /** Opens the circuit (it is not open): `line` says why, unless this outage was logged already. */
  private open(refused: boolean, line: string, level: 'warn' | 'error'): void {
    this.current = 'down';
    this.releaseStartupWaiters();
    if (this.opts.onDown !== undefined) this.opts.onDown();
    // Still the outage logged before: a PING answered since, no script call did.
    const same = this.unconfirmed;
    this.unconfirmed = false;
    this.refused = refused;
    if (!same) {
      this.refusal = level === 'error' ? line : null;
      this.opts.log(line, level);
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
    this.availableAgain();
  }

  /** The connection is ready, or a PING answered: the circuit closes, once the check (if any) passes. */
  markUp(): void {
    if (this.closed || this.current === 'up') return;
    const check = this.opts.check;
    if (check === undefined) {
      this.up();
      return;
    }
    const run = ++this.checks;
    // No probe meanwhile: the check's answer decides whether one is needed.
    this.cancelProbe();
    awaitReply(check(), this.opts.timeoutMs, {
      reply: (refusal) => {
        if (run !== this.checks || this.closed) return;
        if (refusal === null) this.up();
        else {
          this.refusedByCheck = true;
          this.refuse(refusal, 'error');
        }
      },
      fail: (err) => {
        if (run !== this.checks || this.closed) return;
        if (this.opts.onCheckError !== undefined) this.opts.onCheckError();
        const reason = err instanceof Error ? err.message : String(err);
        const refused = err instanceof Error && err.name === 'ReplyError';
        if (this.current !== 'down') this.markDown(reason, refused);
        else if (refused) this.refuse(this.downLine(reason), 'warn');
        else this.scheduleProbe();
      },
      // Already failed (counted as such): the next probe asks again.
      late: () => {},
    });
  }

  /**
   * The check refused (or Redis answered it with an error): the circuit opens, or stays open, and
   * the probe asks again after the probe interval. `line` is logged unless this outage logged it.
   */
  private refuse(line: string, level: 'warn' | 'error'): void {
    if (level === 'error' && this.opts.onCheckError !== undefined) this.opts.onCheckError();
    if (this.current !== 'down') {
      this.open(true, line, level);
      return;
    }
    this.refused = true;
    if (line !== this.refusal) {
      this.refusal = line;
      this.opts.log(line, level);
    }
    this.scheduleProbe();
  }

  private up(): void {
    const wasDown = this.current === 'down';
    this.current = 'up';
    this.releaseStartupWaiters();
    this.cancelProbe();
    // After a refusal, PING answering says nothing of the scripts: logged when one answers
    // (answered()). Unless the check was what refused: its passing now says the scripts may run.
    if (wasDown && this.refused && !this.refusedByCheck) this.unconfirmed = true;
    else if (wasDown) this.availableAgain();
    this.refusedByCheck = false;
    if (this.opts.onUp !== undefined) this.opts.onUp();
  }

  close(): void {
    this.closed = true;
    this.releaseStartupWaiters();
    this.cancelProbe();
  }

  /** The outage is over: said once, and the next refusal is logged again. */
  private availableAgain(): void {
    this.refusal = null;
    this.opts.log(`rate limit store ${this.opts.name} is available again; global limits are enforced`);
  }

  private cancelProbe(): void {
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
