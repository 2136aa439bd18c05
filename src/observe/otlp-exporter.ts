import type { TraceSettings } from './trace-settings.js';
import { CollectorPost, type ExportLog } from './otlp-post.js';
import { SpanBatch } from './span-batch.js';
import { utf8Bytes } from './group-bytes.js';

/** Failed exports are logged at most this often. */
const FAIL_LOG_EVERY_MS = 60_000;

/**
 * OTLP/HTTP JSON exporter with a bounded queue (docs/tracing.md). Each ended span is written as
 * JSON straight into the body of the batch being filled (`reserve`, then `commit`; span-bytes.ts),
 * inside a prebuilt envelope; a batch is one POST of those bytes. At most one export is in
 * flight; spans beyond the queue bound are dropped and counted, as are the spans of a batch the
 * collector did not accept.
 */
export class OtlpExporter {
  /** Spans dropped because the queue was full. */
  droppedQueueFull = 0;
  /** Spans lost in an export that failed (collector down, non-2xx, timeout). */
  droppedExportFailed = 0;
  /** Spans the collector accepted. */
  exported = 0;

  private readonly s: TraceSettings;
  private readonly head: Uint8Array;
  private readonly post: CollectorPost;
  /** The batch being filled, if any. */
  private filling: SpanBatch | null = null;
  /** Batches filled to the batch size, waiting for their export. */
  private readonly full: SpanBatch[] = [];
  /** Spans in `filling` and `full`. */
  private queuedSpans = 0;
  /** The size the last batch's buffer reached: the next one starts there. */
  private batchBytes = 0;
  /** A sent batch, emptied, whose buffer the next batch fills again. */
  private spare: SpanBatch | null = null;
  private inFlight: Promise<void> | null = null;
  private readonly timer: NodeJS.Timeout;
  private closed = false;
  /** Failed exports are logged here, at most once a minute (FAIL_LOG_EVERY_MS), and TLS files taken up again; null = not logged. */
  private readonly log: ExportLog | null;
  /** The endpoint as logged: without user, password or query, which may hold credentials. */
  private readonly where: string;
  private failLoggedAt = -Infinity;
  private failedSinceLog = 0;

  constructor(s: TraceSettings, scopeVersion: string, log: ExportLog | null = null) {
    this.s = s;
    this.log = log;
    const u = new URL(s.endpoint);
    this.where = `${u.origin}${u.pathname}`;
    const resource = s.resource.map(([k, v]) => `{"key":${JSON.stringify(k)},"value":{"stringValue":${JSON.stringify(v)}}}`).join(',');
    this.head = utf8Bytes(`{"resourceSpans":[{"resource":{"attributes":[${resource}]},"scopeSpans":[{"scope":{"name":"inference-router","version":${JSON.stringify(scopeVersion)}},"spans":[`);
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    for (let i = 0; i < s.headers.length; i += 2) headers[s.headers[i]] = s.headers[i + 1];
    this.post = new CollectorPost(s.endpoint, headers, s.timeoutMs, { tls: s.tls, log, compression: s.compression });
    this.timer = setInterval(() => this.exportSoon(), s.scheduleDelayMs);
    this.timer.unref();
  }

  get queued(): number {
    return this.queuedSpans;
  }

  /**
   * Room for one span of at most `bound` bytes, written into the returned batch's `buf` from its
   * `start`, then handed back with `commit`; null when the span is dropped (the queue is full, or the
   * exporter closed).
   */
  reserve(bound: number): SpanBatch | null {
    if (this.closed || this.queuedSpans >= this.s.maxQueueSize) {
      this.droppedQueueFull++;
      return null;
    }
    const batch = this.filling ?? (this.filling = this.newBatch());
    batch.room(bound);
    return batch;
  }

  /** The span reserved in `batch` ends at `end`; a batch filled to the batch size goes out at once. */
  commit(batch: SpanBatch, end: number): void {
    batch.wrote(end);
    this.queuedSpans++;
    if (batch.spans < this.s.maxBatchSize) return;
    this.filling = null;
    this.batchBytes = batch.buf.length;
    this.full.push(batch);
    this.exportSoon();
  }

  /** Sends everything queued (in batches); resolves when the queue is empty and nothing is in flight. */
  async flush(): Promise<void> {
    while (this.queuedSpans > 0 || this.inFlight !== null) {
      if (this.inFlight === null) this.exportSoon();
      await this.inFlight;
    }
  }

  /** Stops the timer and flushes; spans pushed later are dropped. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
    this.closed = true;
    this.post.close();
  }

  private exportSoon(): void {
    if (this.inFlight !== null) return;
    let batch = this.full.shift();
    if (batch === undefined) {
      if (this.filling === null || this.filling.spans === 0) return;
      batch = this.filling;
      this.filling = null;
    }
    this.queuedSpans -= batch.spans;
    this.inFlight = this.send(batch).finally(() => {
      this.inFlight = null;
      if (this.full.length > 0) this.exportSoon();
    });
  }

  private async send(batch: SpanBatch): Promise<void> {
    const spans = batch.spans;
    const sent = await this.post.send(batch.body());
    if (sent.failure !== null) this.exportFailed(spans, sent.failure);
    else if (sent.status >= 200 && sent.status < 300) this.exported += spans;
    else this.exportFailed(spans, `HTTP ${sent.status}`);
    batch.empty();
    this.spare = batch;
  }

  /** The batch to fill next: the spare one's buffer again, or a new one of the last batch's size. */
  private newBatch(): SpanBatch {
    const spare = this.spare;
    if (spare === null) return new SpanBatch(this.head, this.batchBytes);
    this.spare = null;
    return spare;
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
    this.log('warn', `exporting spans to ${this.where} failed (${reason}): ${this.failedSinceLog} span(s) dropped since the last such line (at most one a minute)`);
    this.failedSinceLog = 0;
  }
}
