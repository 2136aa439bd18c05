import type { TraceSettings } from './trace-settings.js';

/** Failed exports are logged at most this often. */
const FAIL_LOG_EVERY_MS = 60_000;

/**
 * OTLP/HTTP JSON exporter with a bounded queue (docs/tracing.md). Each ended span arrives
 * as its ready JSON text; a batch is one POST of the texts joined inside a prebuilt envelope.
 * At most one export is in flight; spans beyond the queue bound are dropped and counted, as are
 * the spans of a batch the collector did not accept.
 */
export class OtlpExporter {
  /** Spans dropped because the queue was full. */
  droppedQueueFull = 0;
  /** Spans lost in an export that failed (collector down, non-2xx, timeout). */
  droppedExportFailed = 0;
  /** Spans the collector accepted. */
  exported = 0;

  private readonly s: TraceSettings;
  private readonly head: string;
  private readonly headers: Record<string, string>;
  private queue: string[] = [];
  private inFlight: Promise<void> | null = null;
  private readonly timer: NodeJS.Timeout;
  private closed = false;
  /** Failed exports are logged here, at most once a minute (FAIL_LOG_EVERY_MS); null = not logged. */
  private readonly log: ((message: string) => void) | null;
  /** The endpoint as logged: without user, password or query, which may hold credentials. */
  private readonly where: string;
  private failLoggedAt = -Infinity;
  private failedSinceLog = 0;

  constructor(s: TraceSettings, scopeVersion: string, log: ((message: string) => void) | null = null) {
    this.s = s;
    this.log = log;
    const u = new URL(s.endpoint);
    this.where = `${u.origin}${u.pathname}`;
    const resource = s.resource.map(([k, v]) => `{"key":${JSON.stringify(k)},"value":{"stringValue":${JSON.stringify(v)}}}`).join(',');
    this.head = `{"resourceSpans":[{"resource":{"attributes":[${resource}]},"scopeSpans":[{"scope":{"name":"inference-router","version":${JSON.stringify(scopeVersion)}},"spans":[`;
    this.headers = { 'content-type': 'application/json' };
    for (let i = 0; i < s.headers.length; i += 2) this.headers[s.headers[i]] = s.headers[i + 1];
    this.timer = setInterval(() => this.exportSoon(), s.scheduleDelayMs);
    this.timer.unref();
  }

  get queued(): number {
    return this.queue.length;
  }

  /** Queues one span's JSON; sends a batch at once when one is full. */
  push(spanJson: string): void {
    if (this.closed || this.queue.length >= this.s.maxQueueSize) {
      this.droppedQueueFull++;
      return;
    }
    this.queue.push(spanJson);
    if (this.queue.length >= this.s.maxBatchSize) this.exportSoon();
  }

  /** Sends everything queued (in batches); resolves when the queue is empty and nothing is in flight. */
  async flush(): Promise<void> {
    while (this.queue.length > 0 || this.inFlight !== null) {
      if (this.inFlight === null) this.exportSoon();
      await this.inFlight;
    }
  }

  /** Stops the timer and flushes; spans pushed later are dropped. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
    this.closed = true;
  }

  private exportSoon(): void {
    if (this.inFlight !== null || this.queue.length === 0) return;
    const batch = this.queue.length <= this.s.maxBatchSize ? this.queue : this.queue.slice(0, this.s.maxBatchSize);
    this.queue = batch === this.queue ? [] : this.queue.slice(batch.length);
    this.inFlight = this.send(batch).finally(() => {
      this.inFlight = null;
      if (this.queue.length >= this.s.maxBatchSize) this.exportSoon();
    });
  }

  private async send(batch: string[]): Promise<void> {
    try {
      // Node's built-in fetch: no runtime dependency for an opt-in feature.
      const res = await fetch(this.s.endpoint, {
        method: 'POST',
        headers: this.headers,
        body: `${this.head}${batch.join(',')}]}]}]}`,
        signal: AbortSignal.timeout(this.s.timeoutMs),
      });
      await res.arrayBuffer();
      if (res.ok) this.exported += batch.length;
      else this.exportFailed(batch.length, `HTTP ${res.status}`);
    } catch (err) {
      const e = err as Error;
      const cause = (e.cause as Error | undefined)?.message;
      this.exportFailed(batch.length, e.name === 'TimeoutError' ? `no answer within ${this.s.timeoutMs} ms` : `${e.message}${cause ? ` (${cause})` : ''}`);
    }
  }

  /**
   * A batch the collector did not take: counted, and logged at most once a minute with the spans
   * dropped since the last line, so a wrong endpoint or credentials do not go unnoticed.
   */
  private exportFailed(spans: number, reason: string): void {
    this.droppedExportFailed += spans;
    if (this.log === null) return;
    this.failedSinceLog += spans;
    const now = Date.now();
    if (now - this.failLoggedAt < FAIL_LOG_EVERY_MS) return;
    this.failLoggedAt = now;
    this.log(`exporting spans to ${this.where} failed (${reason}): ${this.failedSinceLog} span(s) dropped since the last such line (at most one a minute)`);
    this.failedSinceLog = 0;
  }
}
