import type * as UWS from 'uWebSockets.js';
import type { HttpResponse } from 'uWebSockets.js';
import { inferenceHandler, type FrontHooks } from './inference-front.js';
import { sendPlain } from './plain-answer.js';
import { unlessRefused } from './framing-refusal.js';

export interface AppHooks extends FrontHooks {
  ready(): boolean;
  /** Prebuilt body of GET /v1/models. */
  modelsJson(): string;
  /** GET /metrics body, or null when metrics are not served. */
  metrics: ((res: HttpResponse) => void) | null;
}

const JSON_TYPE = 'application/json';
const TEXT_TYPE = 'text/plain; charset=utf-8';

/** The uWS app of one worker process: health, readiness, models and the inference front. */
export function buildApp(uws: typeof UWS, h: AppHooks): UWS.TemplatedApp {
  const app = uws.App();
  // Every handler is wrapped: see framing-refusal.ts.
  app.get('/healthz', unlessRefused((res) => sendPlain(res, 200, TEXT_TYPE, 'ok\n')));
  app.get('/readyz', unlessRefused((res) => {
    if (h.ready()) sendPlain(res, 200, TEXT_TYPE, 'ready\n');
    else sendPlain(res, 503, TEXT_TYPE, h.draining() ? 'draining\n' : 'starting\n');
  }));
  app.get('/v1/models', unlessRefused((res) => sendPlain(res, 200, JSON_TYPE, h.modelsJson(), h.draining())));
  if (h.metrics !== null) app.get('/metrics', unlessRefused(h.metrics));
  app.any('/v1/*', unlessRefused(inferenceHandler(h)));
  app.any('/*', unlessRefused((res, req) => {
    sendPlain(res, 404, TEXT_TYPE, `no such path: ${req.getUrl()}\n`, h.draining());
  }));
  return app;
}
