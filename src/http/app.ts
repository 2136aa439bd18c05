import type * as UWS from 'uWebSockets.js';
import { sslAppOptions } from './tls-options.js';
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import type { ListenerTls } from '../config/listener-tls.js';
import { RouterError } from '../errors.js';
import { acceptsJson } from './error-body.js';
import { inferenceHandler, type FrontHooks } from './inference-front.js';
import { sendPlain, sendPlainError } from './plain-answer.js';
import { asksCloseAmongOptions } from './upstream-headers.js';
import { unknownPathError, unknownPathText } from './unknown-path.js';

export interface AppHooks extends FrontHooks {
  ready(): boolean;
  /** Prebuilt body of GET /v1/models. */
  modelsJson(): string;
  /** Prebuilt body of GET /v1/models/{id} (the OpenAI model object), or undefined when not served. */
  modelJson(id: string): string | undefined;
  /** GET /metrics (HEAD: `head`, its headers only; `draining`: close the connection after it), or null when metrics are not served. */
  metrics: ((res: HttpResponse, head: boolean, draining: () => boolean) => void) | null;
}

const JSON_TYPE = 'application/json';
const TEXT_TYPE = 'text/plain; charset=utf-8';
const MODEL_PREFIX = '/v1/models/';
const ALLOW_GET = Object.freeze({ allow: 'GET, HEAD' });

/**
 * The uWS app of one worker process: health, readiness, models and the inference front; HTTPS with
 * `tls`'s certificate and key (read here, when the worker opens its listener), else plain HTTP.
 */
export function buildApp(uws: typeof UWS, h: AppHooks, tls: ListenerTls | null = null): UWS.TemplatedApp {
  const app = tls === null ? uws.App() : uws.SSLApp(sslAppOptions(tls));
  setClientTimeouts(app);
  // Each GET path answers HEAD as GET would, without the body (RFC 9110 §9.3.2).
  // While the router drains every answer closes its connection, these too.
  getAndHead(app, '/healthz', (res, req, head) => sendPlain(res, 200, TEXT_TYPE, 'ok\n', closing(req, h), head));
  getAndHead(app, '/readyz', (res, req, head) => {
    const close = closing(req, h);
    if (h.ready()) sendPlain(res, 200, TEXT_TYPE, 'ready\n', close, head);
    else sendPlain(res, 503, TEXT_TYPE, h.draining() ? 'draining\n' : 'starting\n', close, head);
  });
  getAndHead(app, '/v1/models', (res, req, head) => sendPlain(res, 200, JSON_TYPE, h.modelsJson(), closing(req, h), head));
  // The id is the rest of the path (a model name may hold '/'), percent-decoded.
  getAndHead(app, '/v1/models/*', (res, req, head) => {
    const id = modelId(req.getUrl());
    const body = id === null ? undefined : h.modelJson(id);
    if (body !== undefined) sendPlain(res, 200, JSON_TYPE, body, closing(req, h), head);
    else sendPlainError(res, new RouterError('model_not_found', `model "${id ?? req.getUrl().slice(MODEL_PREFIX.length)}" is not served by any route`), wantsJson(req), closing(req, h), head);
  });
  app.any('/v1/models', (res, req) => modelsMethodNotAllowed(res, req, h));
  app.any('/v1/models/*', (res, req) => modelsMethodNotAllowed(res, req, h));
  const metrics = h.metrics;
  if (metrics !== null) getAndHead(app, '/metrics', (res, req, head) => metrics(res, head, closeAsked(req) ? ALWAYS : h.draining));
  app.any('/v1/*', inferenceHandler(h));
  app.any('/*', (res, req) => {
    // A newcomer's first calls: the answer says what the router serves (unknown-path.ts).
    const path = req.getUrl();
    const head = req.getMethod() === 'head';
    if (wantsJson(req)) sendPlainError(res, unknownPathError(path), true, closing(req, h), head);
    else sendPlain(res, 404, TEXT_TYPE, unknownPathText(path), closing(req, h), head);
  });
  return app;
}

/**
 * Seconds a client connection may go without progress before the HTTP server closes it: nothing
 * received (between requests, in a header block, mid-upload), or, while an answer waits for the
 * client to read, no room freed in its socket. The uWS 20.30 build has these fixed at 10 s
 * (HTTP_IDLE_TIMEOUT_S, HTTP_TIMEOUT_S); the 20.57 build defaults both to 30 s and has setters,
 * which the router sets to the same 10 s, so the limits are one on every runtime
 * (docs/configuration.md, HTTP limits).
 */
export const CLIENT_TIMEOUT_SECONDS = 10;

/** The 20.57 build's setters of its idle (reading a request) and response (writing an answer, keep-alive) timeouts. */
interface ClientTimeoutSetters {
  setIdleTimeout?: (seconds: number) => unknown;
  setResponseTimeout?: (seconds: number) => unknown;
}

/** Sets the build's client timeouts to CLIENT_TIMEOUT_SECONDS where it can (20.57); the 20.30 build's are that already. */
export function setClientTimeouts(app: UWS.TemplatedApp): void {
  const a = app as unknown as ClientTimeoutSetters;
  if (typeof a.setIdleTimeout === 'function') a.setIdleTimeout(CLIENT_TIMEOUT_SECONDS);
  if (typeof a.setResponseTimeout === 'function') a.setResponseTimeout(CLIENT_TIMEOUT_SECONDS);
}

/** uWS's close of an app (both builds; the 20.30 build's typings lack it): every socket, listening or connected. */
interface AppClose {
  close: () => unknown;
}

/**
 * Closes every connection of `app` (and its listen socket, if still open), as the process's exit
 * would: what the kernel's socket buffers hold still goes out before its FIN, but what uWS kept in
 * its own buffer (bytes the socket did not take yet) is dropped, so only once no answer may have
 * bytes there (http/client-send-queue.ts; off Linux drainState.tailMayBeBuffered). A request's onAborted runs
 * for each one still open.
 */
export function closeConnections(app: UWS.TemplatedApp): void {
  (app as unknown as AppClose).close();
}

/** Serves `pattern` for GET and for HEAD (`head`: the GET answer's headers only). */
function getAndHead(app: UWS.TemplatedApp, pattern: string, serve: (res: HttpResponse, req: HttpRequest, head: boolean) => void): void {
  app.get(pattern, (res, req) => serve(res, req, false));
  app.head(pattern, (res, req) => serve(res, req, true));
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
  sendPlainError(res, err, wantsJson(req), closing(req, h));
}

const ALWAYS = (): boolean => true;

/**
 * Whether the answer closes its connection: while the router drains, and when the client's
 * `Connection` holds `close` among other options (`TE, close`): uWS closes on `close` alone itself.
 */
function closing(req: HttpRequest, h: AppHooks): boolean {
  return h.draining() || closeAsked(req);
}

function closeAsked(req: HttpRequest): boolean {
  return asksCloseAmongOptions(req.getHeader('connection'));
}
