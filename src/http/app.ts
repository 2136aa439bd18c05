import type * as UWS from 'uWebSockets.js';
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { RouterError } from '../errors.js';
import { acceptsJson } from './error-body.js';
import { inferenceHandler, type FrontHooks } from './inference-front.js';
import { sendPlain, sendPlainError } from './plain-answer.js';

export interface AppHooks extends FrontHooks {
  ready(): boolean;
  /** Prebuilt body of GET /v1/models. */
  modelsJson(): string;
  /** Prebuilt body of GET /v1/models/{id} (the OpenAI model object), or undefined when not served. */
  modelJson(id: string): string | undefined;
  /** GET /metrics body, or null when metrics are not served. */
  metrics: ((res: HttpResponse) => void) | null;
}

const JSON_TYPE = 'application/json';
const TEXT_TYPE = 'text/plain; charset=utf-8';
const MODEL_PREFIX = '/v1/models/';
const ALLOW_GET = Object.freeze({ allow: 'GET' });

/** The uWS app of one worker process: health, readiness, models and the inference front. */
export function buildApp(uws: typeof UWS, h: AppHooks): UWS.TemplatedApp {
  const app = uws.App();
  app.get('/healthz', (res) => sendPlain(res, 200, TEXT_TYPE, 'ok\n'));
  app.get('/readyz', (res) => {
    if (h.ready()) sendPlain(res, 200, TEXT_TYPE, 'ready\n');
    else sendPlain(res, 503, TEXT_TYPE, h.draining() ? 'draining\n' : 'starting\n');
  });
  app.get('/v1/models', (res) => sendPlain(res, 200, JSON_TYPE, h.modelsJson(), h.draining()));
  // The id is the rest of the path (a model name may hold '/'), percent-decoded.
  app.get('/v1/models/*', (res, req) => {
    const id = modelId(req.getUrl());
    const body = id === null ? undefined : h.modelJson(id);
    if (body !== undefined) sendPlain(res, 200, JSON_TYPE, body, h.draining());
    else sendPlainError(res, new RouterError('model_not_found', `model "${id ?? req.getUrl().slice(MODEL_PREFIX.length)}" is not served by any route`), wantsJson(req), h.draining());
  });
  app.any('/v1/models', (res, req) => modelsMethodNotAllowed(res, req, h));
  app.any('/v1/models/*', (res, req) => modelsMethodNotAllowed(res, req, h));
  if (h.metrics !== null) app.get('/metrics', h.metrics);
  app.any('/v1/*', inferenceHandler(h));
  app.any('/*', (res, req) => {
    sendPlain(res, 404, TEXT_TYPE, `no such path: ${req.getUrl()}\n`, h.draining(), req.getMethod() === 'head');
  });
  return app;
}

function wantsJson(req: HttpRequest): boolean {
  return acceptsJson(req.getHeader('accept'));
}

function modelId(url: string): string | null {
  try {
    return decodeURIComponent(url.slice(MODEL_PREFIX.length));
  } catch {
    return null;
  }
}

function modelsMethodNotAllowed(res: HttpResponse, req: HttpRequest, h: AppHooks): void {
  const method = req.getCaseSensitiveMethod().toUpperCase();
  const err = new RouterError('invalid_request', `method ${method} is not allowed on ${req.getUrl()}; use GET`, 405, ALLOW_GET, 'method_not_allowed');
  sendPlainError(res, err, wantsJson(req), h.draining(), method === 'HEAD');
}
