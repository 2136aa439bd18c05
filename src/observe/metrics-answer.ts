import type { HttpResponse } from 'uWebSockets.js';
import type { RouterMetrics } from './metrics.js';
import type { WorkerMetricsLink } from './metrics-cluster.js';
import { sendPlain } from '../http/plain-answer.js';

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
    const state = { aborted: false };
    res.onAborted(() => {
      state.aborted = true;
    });
    link.collect().then(
      (text) => {
        if (state.aborted) return;
        res.cork(() => sendPlain(res, 200, contentType, text, draining(), head));
      },
      (err: Error) => {
        if (state.aborted) return;
        res.cork(() => sendPlain(res, 503, TEXT_TYPE, `metrics unavailable: ${err.message}\n`, draining(), head));
      },
    );
  };
}
