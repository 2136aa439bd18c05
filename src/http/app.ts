import type * as UWS from 'uWebSockets.js';
import type { HttpResponse } from 'uWebSockets.js';
import { inferenceHandler, type FrontHooks } from './inference-front.js';
import { sendPlain } from './plain-answer.js';

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
  app.get('/healthz', (res) => sendPlain(res, 200, TEXT_TYPE, 'ok\n'));
  app.get('/readyz', (res) => {
    if (h.ready()) sendPlain(res, 200, TEXT_TYPE, 'ready\n');
    else sendPlain(res, 503, TEXT_TYPE, h.draining() ? 'draining\n' : 'starting\n');
  });
  app.get('/v1/models', (res) => sendPlain(res, 200, JSON_TYPE, h.modelsJson(), h.draining()));
  if (h.metrics !== null) app.get('/metrics', h.metrics);
  app.any('/v1/*', inferenceHandler(h));
  app.any('/*', (res, req) => {
    sendPlain(res, 404, TEXT_TYPE, `no such path: ${req.getUrl()}\n`, h.draining());
  });
  return app;
}
