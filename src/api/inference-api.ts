import type { RouterError } from '../errors.js';
import type { PromptText } from '../tokens/prompt-text.js';

/**
 * One inference API the router speaks (today: the OpenAI-style /v1 endpoints). The pipeline and
 * the upstream leg ask this object; they know nothing of body shapes.
 */
export interface InferenceApi {
  /** Parses and checks a request body; throws RouterError(invalid_request) naming what is wrong. */
  parse(raw: Buffer, url: string): InferenceRequest;
  /** What of the request counts as input tokens. Never throws. */
  promptText(req: InferenceRequest): PromptText;
  /**
   * `req` as plain values without its body: what a thread that parsed the body hands back to the
   * event loop (a structured clone; api/parse-task.ts).
   */
  detach(req: InferenceRequest): object;
  /** A request `detach` gave, on the event loop again: its body is parsed again from `raw` only if something reads it. */
  attach(detached: object, raw: Buffer): InferenceRequest;
  /**
   * The body sent upstream: the client's bytes unchanged unless the model is rewritten (`model`
   * non-null and different) or the stream needs usage reporting turned on.
   */
  upstreamBody(raw: Buffer, req: InferenceRequest, model: string | null): UpstreamBody;
  /** Usage of a complete (non-stream) answer body; malformed bodies give nulls and ''. */
  jsonUsage(body: Buffer): AnswerUsage;
  /**
   * Usage of a JSON answer too large to keep whole, from its last bytes (at least its last
   * 64 KiB, cut anywhere): the counts of a `usage` member only small members follow, or null
   * when the bytes do not end so (its output is then not known).
   */
  tailUsage(tail: Buffer): AnswerUsage | null;
  /**
   * A reader for a streamed (SSE) answer; `strip` removes the usage event the router asked for.
   * Generated text goes to `text` as it passes (never held by the reader). `tokensPerEvent`
   * non-null: the pod ended its last stream with an output count, so events past the reader's
   * bound are not read but counted, each estimated at `tokensPerEvent` tokens
   * (`GeneratedText.uncounted`) in case this stream ends without one. `requestBytes`: the size of
   * the request's body, for an API whose events echo parts of the request (their lines may be as
   * long as those parts).
   */
  streamUsage(strip: boolean, text: GeneratedText, tokensPerEvent: number | null, requestBytes: number): StreamUsageReader;
  /**
   * The event a streamed answer the router cuts ends with, before its connection is closed: `err`
   * as the API's clients read an error in a stream (whole, its blank line included).
   */
  streamErrorEvent(err: RouterError): Buffer;
  /**
   * How a request is split into a prefill and a decode request (a ModelServer with
   * workloadSelector.pdGroup); null when the API has no such split.
   */
  readonly disaggregation: DisaggregatedBodies | null;
}

/** The bodies of a request served by a prefill pod, then a decode pod. */
export interface DisaggregatedBodies {
  /** Whether `req` (its path) can be served so. */
  supports(req: InferenceRequest): boolean;
  /** The prefill pod's body; `kvTransfer`: ask the pod to keep its KV cache for a remote decode (NIXL, Mooncake). */
  prefillBody(raw: Buffer, req: InferenceRequest, model: string | null, kvTransfer: boolean): Buffer;
  /** The decode pod's body; `kvParams` non-null: the prefill answer's `kv_transfer_params`, passed on. */
  decodeBody(raw: Buffer, req: InferenceRequest, model: string | null, kvParams: Buffer | null): UpstreamBody;
  /** SGLang's prefill body: prefillBody's changes (no KV transfer asked) with `bootstrap_room` (decimal digits, written as a JSON integer). */
  sglangPrefillBody(raw: Buffer, req: InferenceRequest, model: string | null, room: string): Buffer;
  /** SGLang's decode body: decodeBody's (no kv_transfer_params) with `bootstrap_room` and `bootstrap_host` (the prefill pod's host). */
  sglangDecodeBody(raw: Buffer, req: InferenceRequest, model: string | null, room: string, host: string): UpstreamBody;
  /** The `kv_transfer_params` of a prefill answer as JSON (`null` when it has none); null when the answer is not a JSON object. */
  kvTransferParams(answer: Buffer): Buffer | null;
}

/** The parts of a request every API has; an API's parse() may return more. */
export interface InferenceRequest {
  readonly body: Record<string, unknown>;
  readonly model: string;
  readonly stream: boolean;
}

export interface UpstreamBody {
  body: Buffer;
  /** The router turned on stream usage reporting: remove the usage event from the client's stream. */
  stripUsage: boolean;
}

/**
 * A usage count as reported by a backend, as AnswerUsage holds it: a number from 0 to 2^53 - 1,
 * rounded to an integer; null for anything else (a count past 2^53, `1e300`, is taken as not
 * reported: the router counts the text instead, which it could not once such a count had stopped
 * the counting, and a charge of such a number could not be applied).
 */
export function tokenCount(value: unknown): number | null {
  return typeof value === 'number' && value >= 0 && value <= Number.MAX_SAFE_INTEGER ? Math.round(value) : null;
}

/** What an answer told about its tokens. */
export interface AnswerUsage {
  /** Input tokens the backend reported (tokenCount), or null. */
  promptTokens: number | null;
  /** Output tokens the backend reported (tokenCount), or null. */
  completionTokens: number | null;
  /** Generated text of a whole (non-stream) answer, for counting when the backend reports no usage. */
  text: string;
  /** A stream's generated text, counted as it passed (null for a whole answer). */
  generated: GeneratedText | null;
  /** A whole answer that was to be JSON and is not (cut short, bytes after it): its counts are unknown. */
  unreadable?: true;
}

/**
 * Takes a stream's generated text piece by piece and counts its tokens with bounded memory (the
 * output count when the backend reports none).
 */
export interface GeneratedText {
  add(text: string): void;
  /** The backend reported its output count: the text is not needed any more. */
  stop(): void;
  /**
   * Tokens estimated for generated text that was not read (a pod expected to report its count;
   * see `InferenceApi.streamUsage`), added to `tokens()`.
   */
  uncounted(tokens: number): void;
  /** Tokens of all text added (the rest is counted now), plus the uncounted estimate. */
  tokens(): number | Promise<number>;
  /** Of `tokens()`, the part given by `uncounted` (0 once stopped). */
  readonly estimatedTokens: number;
}

/** Passes a streamed answer through and learns its usage. */
export interface StreamUsageReader {
  /** Feeds upstream bytes; returns the bytes to forward to the client now. */
  push(chunk: Buffer): Buffer;
  /** End of the stream: the bytes still to forward. */
  end(): Buffer;
  /** What the stream reported (or generated) so far. */
  usage(): AnswerUsage;
  /** Events that could carry generated text (not the usage, not `[DONE]`) before the output count came. */
  readonly textEvents: number;
  /**
   * The stream said it is whole (Chat and Completions: its `[DONE]`): whatever the pod does after
   * (holds the connection, breaks it) takes nothing from the answer.
   */
  readonly finished: boolean;
  /**
   * The bytes so far end inside an event: within a line, or after data lines that no blank line
   * closed yet. At the stream's end (its framing's: a content-length, the last chunk) such an
   * event was cut short, unless it is the stream's last word (`[DONE]`, read by end()).
   */
  readonly endsInEvent: boolean;
  /**
   * The pod's own error event, when the stream carried one (the generation failed partway): its
   * message (the first one's), bounded; else null. The event itself is forwarded as it came.
   */
  readonly podError: string | null;
  /**
   * The bytes to forward after those forwarded so far to end the stream with `event` (a whole
   * event): `event`, with what must come before it, when that leaves every event the client
   * got intact; null when the bytes so far end within an event that `event` would corrupt.
   */
  closingEvent(event: Buffer): Buffer | null;
}
