import type { ErrorType } from '../errors.js';
import type { LateCharge } from '../ratelimit/limiter.js';

/**
 * Everything the router knows about one request, in one fixed-shape object.
 * The constructor sets every field so V8 keeps a single hidden class.
 * Times are `performance.now()` milliseconds; `receivedAt` is wall-clock epoch ms.
 */
export class RequestContext {
  // Copied out of uWS's HttpRequest before any await.
  readonly receivedAt: number;
  readonly t0: number;
  readonly method: string;
  /** Path including the query string, as received. */
  readonly path: string;
  readonly protocol: string;
  requestId: string;
  /**
   * The router made `requestId` (newRequestId: hex digits and dashes), so it needs no escaping
   * anywhere it is written; false for the client's own x-request-id.
   */
  requestIdMade = false;

  // Routing decisions ("" when none).
  modelName = '';
  modelRoute = '';
  modelServer = '';
  selectedPod = '';
  /** With prefill/decode disaggregation: the prefill pod (selectedPod is the decode pod); else ''. */
  prefillPod = '';
  /** The caller's tenant (API key name or JWT tenant claim), '' without auth. */
  tenant = '';

  // Tokens.
  inputTokens = 0;
  outputTokens = 0;
  /** Of outputTokens, the part estimated, not reported or counted (a long stream cut before the pod's count). */
  outputTokensEstimated = 0;
  /** A successful JSON answer too large to keep whole whose end held no usage: its output is not known (0). */
  usageUnread = false;
  /** Epoch ms at which the request's admission against its limits began (0: no limit applies); its input corrections belong to that window. */
  admittedAt = 0;
  /** Of the request's limits, bit i set: limit i admitted it by its failure mode (request-admission.ts byFailureMode). */
  admittedByFailureMode = 0;
  /** What a store may still charge late of an admission its `open` failure mode admitted (request-admission.ts lateCharges), or null. */
  admittedLateCharges: LateCharge[] | null = null;
  /** Per limit, the window its store charged (request-admission.ts windows), or null: the process clock's. */
  admittedWindows: number[] | null = null;

  // Outcome.
  statusCode = 0;
  errorType: ErrorType | null = null;
  errorMessage = '';
  /** The client went away before the answer ended. */
  aborted = false;
  /** The response has been ended (by us) — no more writes. */
  finished = false;

  // Phase marks (performance.now() ms; 0 = not reached).
  tUpstreamStart = 0;
  /** First streamed byte written to the client (streams only). */
  tFirstByte = 0;
  tUpstreamEnd = 0;
  tEnd = 0;

  constructor(method: string, path: string, protocol: string, requestId: string, receivedAt: number, t0: number) {
    this.method = method;
    this.path = path;
    this.protocol = protocol;
    this.requestId = requestId;
    this.receivedAt = receivedAt;
    this.t0 = t0;
  }

  fail(type: ErrorType, message: string, status: number): void {
    this.errorType = type;
    this.errorMessage = message;
    this.statusCode = status;
  }
}
