/**
 * A worker's view of whether its primary answers: a `core:ping` every `everyMs`, answered by
 * `core:pong`. When no pong came for `boundMs` (the primary's loop is stalled, so limits over
 * IPC and metrics scrapes fail), `alive()` is false and /readyz answers 503 until one comes.
 * Transitions are logged once each.
 */
export interface HeartbeatOptions {
  readonly everyMs: number;
  readonly boundMs: number;
  readonly ping: () => void;
  readonly log: (message: string) => void;
  readonly now?: () => number;
}

export class PrimaryHeartbeat {
  private readonly o: HeartbeatOptions;
  private readonly now: () => number;
  private lastPong: number;
  private stale = false;
  private timer: NodeJS.Timeout | null = null;

  constructor(opts: HeartbeatOptions) {
    this.o = opts;
    this.now = opts.now ?? (() => performance.now());
    this.lastPong = this.now();
  }

  start(): void {
    this.lastPong = this.now();
    this.timer = setInterval(() => this.tick(), this.o.everyMs);
    this.timer.unref();
    this.o.ping();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  pong(): void {
    this.lastPong = this.now();
    if (this.stale) {
      this.stale = false;
      this.o.log('the primary answers again; readiness restored');
    }
  }

  /** Whether a pong came within the bound (checked by /readyz and each tick; logs the change). */
  alive(): boolean {
    const silentMs = this.now() - this.lastPong;
    if (silentMs <= this.o.boundMs) return true;
    if (!this.stale) {
      this.stale = true;
      this.o.log(`the primary has not answered a heartbeat for ${Math.round(silentMs)} ms; /readyz answers 503 until it does`);
    }
    return false;
  }

  private tick(): void {
    this.alive();
    this.o.ping();
  }
}
