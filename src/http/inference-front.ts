import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { RouterError } from '../errors.js';
import { isPostEndpoint, knownEndpointPath } from '../api/api-registry.js';
import { acceptsJson } from './error-body.js';
import { Exchange } from './exchange.js';
import { RequestContext } from './request-context.js';
import { asksCloseAmongOptions, connectionNames, dropNamed, forwardRequestHeader } from './upstream-headers.js';
import { drainState } from './drain-state.js';
import { newRequestId } from './request-id.js';
import { performance } from 'node:perf_hooks';
import { Buffer } from 'node:buffer';
import { atTurnEnd } from '../turn-end.js';
import { isAscii } from '../ascii-text.js';
import { isUsualHeader } from '../header-name.js';
import { bodyArrived, bodyArriving } from './arriving-bodies.js';
import { appendChunkedPiece, bodyBufferFor, chunkedBody } from './body-pool.js';
import { DISCARD_MAX_BYTES, discardBody } from './body-discard.js';
import { hasV1Twice, misspeltEndpoint, misspeltEndpointError, v1TwiceError } from './unknown-path.js';

/** What the front needs from the worker. */
export interface FrontHooks {
  readonly maxBodyBytes: number;
  /**
   * A body whose content-length is at least this is read into shared memory (a
   * SharedArrayBuffer), and a chunked body of at least this is joined into it (body-buffer.ts): a
   * tokenizer thread then parses it where it lies, where a copy of a body of megabytes would cost
   * the event loop milliseconds (api/thread-parse.ts). 0 = never.
   */
  readonly sharedBodyMinBytes: number;
  /** Lower-case header names route rules match on (from the current table). */
  matchHeaderNames(): ReadonlySet<string>;
  /** Drop the client's Authorization header upstream (auth enabled). */
  readonly stripAuthorization: boolean;
  draining(): boolean;
  /**
   * A request was accepted (its exchange made): it is in flight from here, also while its body
   * arrives, until run() or finish() has ended it. A drain waits for it.
   */
  accepted(): void;
  /** The body has arrived (or the request already failed): run the rest of the path. */
  run(x: Exchange): void;
  /** A request that failed in the front (bad method, too large): finish it without the pipeline. */
  finish(x: Exchange): void;
}

const REQUEST_ID_MAX = 200;
const PRINTABLE = /^[\x21-\x7e]+$/;

/**
 * uWS handler for /v1/*: copies everything it needs out of HttpRequest synchronously,
 * registers onAborted, then reads the body and hands the exchange to the pipeline.
 */
export function inferenceHandler(h: FrontHooks): (res: HttpResponse, req: HttpRequest) => void {
  return (res, req) => {
    if (drainState.closing) {
      res.close();
      return;
    }
    const t0 = performance.now();
    const url = req.getUrl();
    const query = req.getQuery();
    const method = req.getCaseSensitiveMethod();
    // One pass over the headers, by a module-level function (no closure per request).
    scanStripAuthorization = h.stripAuthorization;
    scanForward = [];
    scanRequestId = '';
    scanContentLength = -1;
    scanLengthsDiffer = false;
    scanLengthInvalid = null;
    scanTransferEncoding = null;
    scanAuthorization = '';
    scanAuthorizationSeen = false;
    scanConnection = '';
    scanAccept = null;
    scanMatchNames = h.matchHeaderNames();
    req.forEach(scanHeader);
    const forward = scanForward;
    scanForward = NO_FORWARD;
    let requestId = scanRequestId;
    const contentLength = scanContentLength;
    const lengthsDiffer = scanLengthsDiffer;
    const lengthInvalid = scanLengthInvalid;
    const transferEncoding = scanTransferEncoding;
    const authorization = scanAuthorization;
    const connection = scanConnection;
    const accept = scanAccept;
    // Headers the client's Connection header names are hop-by-hop: not forwarded.
    if (connection.length > 0) dropNamed(forward, connectionNames(connection));
    const match = scanMatch;
    scanMatch = null;
    const made = requestId.length === 0 || requestId.length > REQUEST_ID_MAX || !PRINTABLE.test(requestId);
    if (made) requestId = newRequestId();
    const endpoint = knownEndpointPath(url);
    const known = query ? null : endpoint;
    const path = known ?? (query ? `${url}?${query}` : url);
    const ctx = new RequestContext(upperMethod(method), path, 'HTTP/1.1', requestId, Date.now(), t0);
    ctx.requestIdMade = made;
    const x = new Exchange(res, ctx, url, forward, match, authorization);
    x.knownEndpoint = endpoint !== null;
    // Only a query or a path that is no endpoint of the router can hold characters outside ASCII.
    if (known === null && !isAscii(path)) x.upstreamPath = utf8Bytes(path);
    x.acceptJson = accept !== null && acceptsJson(accept);
    // `close` among the client's options (`TE, close`): the answer says `connection: close` (RFC
    // 9112 §9.6) and the connection closes after it.
    if (asksCloseAmongOptions(connection)) x.forceClose = true;
    h.accepted();

    res.onAborted(() => {
      x.clientGone(bodyEndedThisTurn === x, !x.handedOn);
      // Aborted while its body was arriving (short upload, idle timeout, framing uWS refused):
      // nothing downstream owns it yet, so the front records it.
      if (!x.handedOn) {
        x.handedOn = true;
        bodyArrived(x);
        h.finish(x);
      }
    });

    if (lengthsDiffer || lengthInvalid !== null || (transferEncoding !== null && (contentLength >= 0 || !chunkedOnly(transferEncoding)))) {
      x.handedOn = true;
      // Answered at the end of the turn, not now (Exchange.refuseAtTurnEnd): a request hidden
      // behind this one in the same read closes the connection instead of reaching a handler
      // (the refusal then goes unsent, its record kept). Nothing is decided by the client's
      // address: other connections from it (a proxy's, a NAT's) are served as usual.
      x.refuseAtTurnEnd(new RouterError('invalid_request', framingFault(lengthsDiffer, lengthInvalid, transferEncoding), 400, null, 'invalid_content_length'));
      h.finish(x);
      return;
    }
    // Checked only on a path that is no endpoint of the router (known is null): /v1/v1/... would
    // otherwise be forwarded, and a pod answers it with a 404 of its own that names no cause.
    if (known === null && hasV1Twice(url)) {
      x.handedOn = true;
      x.sendError(v1TwiceError(url));
      h.finish(x);
      return;
    }
    // The same for a misspelt endpoint (/v1/chat/completion); a path with a query string is
    // checked without it (known is null for those too).
    const meant = known === null ? misspeltEndpoint(url) : null;
    if (meant !== null) {
      x.handedOn = true;
      x.sendError(misspeltEndpointError(url, meant));
      h.finish(x);
      return;
    }
    if (ctx.method !== 'POST') {
      x.handedOn = true;
      x.sendError(isPostEndpoint(url) ? methodNotAllowed(ctx.method, url) : unknownEndpoint(url));
      h.finish(x);
      return;
    }
    if (contentLength > h.maxBodyBytes) {
      x.bodyLength = contentLength;
      // A client that sent `Expect: 100-continue` (curl, for a large body) reads the answer before
      // it sends the body: answered at once, it sends none.
      if (contentLength - h.maxBodyBytes > DISCARD_MAX_BYTES || isUsualHeader(req.getHeader('expect'), '100-continue', '100-Continue')) {
        x.handedOn = true;
        x.forceClose = true;
        x.sendError(tooLarge(h.maxBodyBytes));
        h.finish(x);
        return;
      }
      bodyArriving(x);
      discardBody(x, tooLarge(h.maxBodyBytes), (ended) => h.finish(ended));
      return;
    }
    // Chunked (-1), or the Content-Length (none: no body).
    x.bodyLength = transferEncoding !== null ? -1 : contentLength > 0 ? contentLength : 0;
    readBody(x, contentLength, h);
  };
}

/**
 * The text of a path uWS read as UTF-8, one character per byte of its UTF-8: what the HTTP/1.1
 * client's latin1 write turns back into the bytes the client sent. Written as the text itself, a
 * character above U+00FF would lose its high byte (U+010A would become a line feed in the request
 * line).
 */
function utf8Bytes(text: string): string {
  return Buffer.from(text, 'utf8').toString('latin1');
}

/**
 * The method in upper case: POST as the module's constant (uWS hands over a fresh string per
 * request; comparisons of a constant with itself take no look at the characters).
 */
function upperMethod(method: string): string {
  return method === 'POST' ? 'POST' : method.toUpperCase();
}

// What scanHeader found in the request being read (set and read synchronously in the handler).
const NO_FORWARD: string[] = [];
let scanStripAuthorization = false;
let scanForward: string[] = NO_FORWARD;
let scanRequestId = '';
let scanContentLength = -1;
let scanLengthsDiffer = false;
/** A Content-Length value that is not plain digits, as sent (the first such), or null. */
let scanLengthInvalid: string | null = null;
/** The Transfer-Encoding values (joined by ", "), or null without the header. */
let scanTransferEncoding: string | null = null;
let scanAuthorization = '';
/** An Authorization header was seen in the request being read (an empty one too). */
let scanAuthorizationSeen = false;
let scanConnection = '';
/** The first Accept header (as uWS's getHeader would give it), or null. */
let scanAccept: string | null = null;
/** The header names route rules match on (the current table's). */
let scanMatchNames: ReadonlySet<string> = new Set();
/**
 * The values of those the request has, the first of each, or null when it has none. Read in the
 * same pass as the rest, as forEach() gives them (the client's UTF-8 text, as the pod gets it):
 * a getHeader() per name cost each request a lookup per name any rule uses (2,000 names: several
 * hundred µs), and gave values one character per byte.
 */
let scanMatch: Map<string, string> | null = null;

function scanHeader(name: string, value: string): void {
  if (scanMatchNames.size > 0 && scanMatchNames.has(name)) {
    if (scanMatch === null) scanMatch = new Map([[name, value]]);
    else if (!scanMatch.has(name)) scanMatch.set(name, value);
  }
  if (name === 'x-request-id') {
    // Sent twice: the first, as nginx's $http_x_request_id and Envoy read it.
    if (scanRequestId.length === 0) scanRequestId = value;
  }
  else if (name === 'accept') {
    if (scanAccept === null) scanAccept = value;
    scanForward.push(name, forwardValue(value));
  } else if (name === 'connection') scanConnection = scanConnection.length === 0 ? value : `${scanConnection},${value}`;
  else if (name === 'content-length') {
    // uWS frames the body by the first Content-Length: a second, different one (or one beside
    // Transfer-Encoding) would let a request hidden in the body be read as the next request.
    const n = plainLength(value);
    if (n < 0) {
      scanLengthInvalid ??= value;
      return;
    }
    if (scanContentLength >= 0 && n !== scanContentLength) scanLengthsDiffer = true;
    scanContentLength = n;
  } else if (name === 'transfer-encoding') {
    scanTransferEncoding = scanTransferEncoding === null ? value : `${scanTransferEncoding}, ${value}`;
  } else if (name === 'authorization') {
    // Sent twice, both are kept as one field (RFC 9110 §5.3), which no credential matches: the
    // router must not pick one while a proxy in front, or the pod, picks the other.
    // An empty first one too: the second must not stand alone where a proxy in front reads the first.
    scanAuthorization = scanAuthorizationSeen ? `${scanAuthorization}, ${value}` : value;
    scanAuthorizationSeen = true;
    if (!scanStripAuthorization) scanForward.push(name, forwardValue(value));
  } else if (forwardRequestHeader(name)) scanForward.push(name, forwardValue(value));
}

/**
 * A header value as the HTTP/1.1 client writes it upstream, one byte per character: uWS hands a
 * value over as text decoded from UTF-8, so one with characters outside ASCII becomes the client's
 * UTF-8 bytes again (utf8Bytes). Written as the text itself, U+010D U+010A would become CR LF, and
 * what the client put after them header lines of its own making in the pod's request head.
 */
function forwardValue(value: string): string {
  return isAscii(value) ? value : utf8Bytes(value);
}

/** A Transfer-Encoding (its values joined) that is `chunked` alone, in any case. */
function chunkedOnly(te: string): boolean {
  return isUsualHeader(te, 'chunked', 'Chunked');
}

/**
 * A Content-Length value as RFC 9110 has it, 1*DIGIT (at most 15: past that no body is taken
 * anyway), or -1: a sign, hex, an exponent, a list (`42, 42`), anything else is not a length (the
 * HTTP server closes the connection on such a request, so it is refused rather than read).
 */
function plainLength(value: string): number {
  const n = value.length;
  if (n === 0 || n > 15) return -1;
  let v = 0;
  for (let i = 0; i < n; i++) {
    const d = value.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return -1;
    v = v * 10 + d;
  }
  return v;
}

/**
 * Why a request's framing is refused. This uWS build reads any Transfer-Encoding as chunked, so
 * one that is not `chunked` alone (RFC 9112 §6.3: then the length cannot be known; a server
 * answers 400 and closes) is refused rather than read differently from a proxy in front.
 */
function framingFault(lengthsDiffer: boolean, lengthInvalid: string | null, te: string | null): string {
  if (lengthInvalid !== null) return `request has an invalid Content-Length ${JSON.stringify(lengthInvalid.slice(0, 80))}; a length is digits only, at most 15 of them`;
  if (lengthsDiffer) return 'request has conflicting Content-Length headers';
  if (te !== null && !chunkedOnly(te)) return `request has Transfer-Encoding ${JSON.stringify(te.slice(0, 80))}; only chunked is accepted`;
  return 'request has both Content-Length and Transfer-Encoding headers';
}

const ALLOW_POST = Object.freeze({ allow: 'POST' });

function methodNotAllowed(method: string, url: string): RouterError {
  return new RouterError('invalid_request', `method ${method} is not allowed on ${url}; use POST`, 405, ALLOW_POST, 'method_not_allowed');
}

/** Another method than POST on a /v1 path that is no endpoint of the router. */
function unknownEndpoint(url: string): RouterError {
  return new RouterError('invalid_request', `no such path: ${url}`, 404, null, 'unknown_endpoint');
}

/**
 * The exchange whose body completed in the current turn of the event loop. uWS closes a
 * connection on which the client pipelines a request while the previous answer is pending; it
 * does so while parsing the same bytes that ended the previous body, so an abort of this
 * exchange before the turn ends is that close, not the client's.
 */
let bodyEndedThisTurn: Exchange | null = null;
let clearScheduled = false;

function clearBodyEnded(): void {
  bodyEndedThisTurn = null;
  clearScheduled = false;
}

function markBodyEnded(x: Exchange): void {
  bodyEndedThisTurn = x;
  if (!clearScheduled) {
    clearScheduled = true;
    atTurnEnd(clearBodyEnded);
  }
}

function tooLarge(max: number): RouterError {
  return new RouterError('invalid_request', `request body is larger than ${max} bytes (ROUTER_MAX_BODY_BYTES)`, 413, null, 'request_too_large');
}

function readBody(x: Exchange, contentLength: number, h: FrontHooks): void {
  let buf: Buffer | null = contentLength > 0 ? bodyBufferFor(x, contentLength, h.sharedBodyMinBytes) : null;
  let chunks: Buffer[] | null = contentLength > 0 ? null : [];
  let size = 0;
  let done = false;
  bodyArriving(x);
  x.res.onData((ab, isLast) => {
    if (done || x.handedOn) return;
    // A plain view: uWS reuses the ArrayBuffer after the callback, so its bytes are copied below.
    const chunk = new Uint8Array(ab);
    if (size + chunk.length > h.maxBodyBytes || (buf !== null && size + chunk.length > buf.length)) {
      done = true;
      if (buf === null && !isLast) {
        // A chunked body past the limit: what still comes is read and dropped, then answered 413.
        chunks = null;
        x.bodyBytes = size + chunk.length;
        discardBody(x, tooLarge(h.maxBodyBytes), (ended) => h.finish(ended));
        return;
      }
      x.handedOn = true;
      bodyArrived(x);
      // At the end of the turn, as a refused framing: a request behind the body in the same read
      // must not reach a handler.
      x.refuseAtTurnEnd(size + chunk.length > h.maxBodyBytes ? tooLarge(h.maxBodyBytes) : new RouterError('invalid_request', 'request body is longer than its content-length', 400, null, 'invalid_content_length'));
      h.finish(x);
      return;
    }
    if (buf !== null) buf.set(chunk, size);
    else appendChunkedPiece(x, chunks!, chunk, size);
    size += chunk.length;
    x.bodyBytes = size;
    if (!isLast) return;
    done = true;
    x.body = buf !== null ? (size === buf.length ? buf : buf.subarray(0, size)) : chunkedBody(x, chunks!, size, h.sharedBodyMinBytes);
    buf = null;
    chunks = null;
    x.handedOn = true;
    bodyArrived(x);
    markBodyEnded(x);
    h.run(x);
  });
}
