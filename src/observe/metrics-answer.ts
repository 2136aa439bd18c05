import type { HttpResponse } from 'uWebSockets.js';
import type { RouterMetrics } from './metrics.js';
import type { MetricsTextSink, WorkerMetricsLink } from './metrics-cluster.js';
import { sendPlain, startPlain } from '../http/plain-answer.js';

const TEXT_TYPE = 'text/plain; charset=utf-8';

/**
 * uWS handler for GET /metrics in a worker: registers onAborted, asks the primary (through
 * `link`) for the aggregate, and writes it corked (503 with the reason when it cannot be had). `head`: a HEAD
 * request, answered with the same headers and no body; `draining()` when the answer is written:
 * the connection closes after it.
 */
export function metricsHandler(metrics: RouterMetrics, link: WorkerMetricsLink): (res: HttpResponse, head: boolean, draining: () => boolean) => void {
  const contentType = metrics.contentType;
  return (res, head, draining) => {
    link.collect(new MetricsAnswer(res, contentType, head, draining));
  };
}

/**
 * One scrape's answer, written as the text comes from the primary. A text in one part is written
 * whole with its Content-Length; a text in parts (a large one: metrics-cluster.ts TEXT_PART_CHARS)
 * part by part as each arrives, chunked, so that the worker reads and writes a part a turn and
 * serves requests between two instead of holding its event loop for the whole text. The answer to
 * a HEAD request waits for the whole text, for its length.
 */
class MetricsAnswer implements MetricsTextSink {
  private aborted = false;
  /** Whether the status and headers are written (a part was): a failure then cuts the answer. */
  private started = false;
  /** A HEAD request's parts so far. */
  private readonly held: string[] = [];

  constructor(
    private readonly res: HttpResponse,
    private readonly contentType: string,
    private readonly head: boolean,
    private readonly draining: () => boolean,
  ) {
    res.onAborted(() => {
      this.aborted = true;
    });
  }

  part(text: string): void {
    if (this.aborted) return;
    if (this.head) {
      this.held.push(text);
      return;
    }
    this.res.cork(() => {
      if (!this.started) {
        this.started = true;
        startPlain(this.res, 200, this.contentType);
        // Said now, with the headers: end()'s close flag, once parts are written, writes its
        // header line into the chunked body (as the last chunk's size), which the scraper cannot read.
        if (this.draining()) this.res.writeHeader('connection', 'close');
      }
      this.res.write(text);
    });
  }

  end(text: string): void {
    if (this.aborted) return;
    if (this.started) {
      this.res.cork(() => this.res.end(text));
      return;
    }
    const body = this.held.length === 0 ? text : this.held.join('') + text;
    this.res.cork(() => sendPlain(this.res, 200, this.contentType, body, this.draining(), this.head));
  }

  fail(err: Error): void {
    if (this.aborted) return;
    if (this.started) {
      // Its status and part of the text are sent: cut, so that the scraper takes it as failed, not as a short text.
      this.aborted = true;
      this.res.close();
      return;
    }
    this.res.cork(() => sendPlain(this.res, 503, TEXT_TYPE, `metrics unavailable: ${err.message}\n`, this.draining(), this.head));
  }
}
