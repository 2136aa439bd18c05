/**
 * Scans an OpenAI-style server-sent-event stream as it passes through the router: learns the usage
 * the backend reports and the generated text, and optionally removes the usage the router asked
 * for on the client's behalf with `stream_options.include_usage`: the extra usage chunk (the event
 * with a usage object and empty `choices`), or, from a server that puts the usage on a content
 * chunk (llama.cpp's, on the one with finish_reason), that event's `usage` members (in any
 * spelling a JSON parser reads as `usage`, over however many data lines, set to anything: an
 * object, a number, a string...), cut out of its JSON with the rest of the event forwarded byte for
 * byte (sse-member-cut.ts). Usage members that are all `null` are left: they carry nothing, and
 * cutting them would copy every token chunk. Only a usage object is counted from.
 *
 * Made of four parts: the SSE line splitter (sse-lines.ts), the per-event usage reader
 * (openai-event-usage.ts), the strip filter (sse-strip.ts) and the member cut.
 *
 * - keep mode (`stripUsageChunk: false`): `push` returns the very chunk it was given; nothing waits.
 * - strip mode: `push` returns every complete event at once and holds only the current partial
 *   event, which is needed to decide whether it is the usage chunk or carries usage. An event
 *   that outgrows the bound is forwarded as it comes, with its `usage` members cut as they pass
 *   (sse-member-stream-cut.ts) and read from there.
 *
 * With a GeneratedText, an event whose data can hold no usage (`mayCarryUsage`: no `"usage"` key
 * but one set to null) is not parsed as it passes: its data is kept, up to
 * HELD_EVENT_CHARS characters, and read when a later event does not report the completion count
 * (or at the end). A stream that ends with its usage, as backends send it when asked, never has
 * its content events parsed: their text is not needed.
 *
 * Past HELD_EVENT_CHARS the held events are parsed then, to bound memory, unless the caller says
 * the pod reports its count (`tokensPerEvent` non-null): then they are dropped unread, as is every
 * later event that can hold no usage, and only counted; if the stream still ends without a
 * completion count, each dropped event counts as `tokensPerEvent` tokens
 * (`GeneratedText.uncounted`), what the pod's own counted streams had per event. A long answer
 * from such a pod is then never parsed but for its usage.
 *
 * Each event's data is also tested on its first bytes for the pod's own error event
 * (openai-error-event.ts), the last event before `[DONE]` or the stream's end for an `error` member
 * anywhere at its top level, and a line that is not a `data` line for an `error` field: the first
 * error found gives `podError`. And the scanner knows where the bytes it forwarded end
 * (`closingEvent`): at an event's end, or within one.
 */
import type { AnswerUsage, GeneratedText, StreamUsageReader } from './inference-api.js';
import { applyEvent, escapesUsageLetter, mayCarryUsage, parseEvent, reportsCompletion, setsUsageKey, startsObject, type StreamEvent } from './openai-event-usage.js';
import { errorEventMessage, errorFieldMessage, lastEventErrorMessage, opensWithError } from './openai-error-event.js';
import { dataValue, DEFAULT_MAX_EVENT_BYTES, fieldValue, SseLineSplitter, type SseLineSink } from './sse-lines.js';
import { eventWithoutMember } from './sse-member-cut.js';
import { SseStripFilter } from './sse-strip.js';
import { Buffer } from 'node:buffer';

export { DEFAULT_MAX_EVENT_BYTES };

/** Most characters of unparsed event data one stream keeps before reading it. */
export const HELD_EVENT_CHARS = 64 * 1024;

const EMPTY = Buffer.alloc(0);
/**
 * A blank line ending an event of complete lines without data (closingEvent). CRLF: after a line
 * that ended with a lone `\r` (its `\n` may have been to come) it is read as that line's end and
 * then a blank line; after `\n` or `\r\n`, as a blank line.
 */
const BLANK_LINE = Buffer.from('\r\n', 'latin1');

/** What to do with an event in strip mode: forward it, remove it (the usage chunk), or cut its usage member. */
const KEEP = 0;
const DROP = 1;
const CUT = 2;
type EventAction = typeof KEEP | typeof DROP | typeof CUT;

const USAGE_KEY = Buffer.from('usage', 'latin1');
/** The SSE field llama.cpp's server writes its error in, instead of `data`. */
const ERROR_FIELD = Buffer.from('error', 'latin1');
/** The data of the event that ends an OpenAI-style stream. */
const DONE = '[DONE]';
/** The event without its usage members when one of them is set (not null); else null (as it came). */
const withoutUsage = (event: Buffer): Buffer | null => eventWithoutMember(event, USAGE_KEY, true);

export interface SseUsageOptions {
  /**
   * Remove the usage-only event (usage set, `choices: []`) from the forwarded bytes, and the
   * `usage` member of any other event that sets it.
   */
  stripUsageChunk: boolean;
  /**
   * Most bytes held back for one partial event (strip mode) or kept to parse one partial line.
   * A longer event is forwarded as it comes and never stripped; a longer line is not parsed.
   * Default 1 MiB.
   */
  maxEventBytes?: number;
}

export class SseUsageScanner implements StreamUsageReader, SseLineSink {
  /** Usage of the last event that carried it (null counts when none) and all generated text. */
  protected readonly seen: AnswerUsage = { promptTokens: null, completionTokens: null, text: '', generated: null };
  /** Where generated text goes; null: kept in `text` (tests, tools). */
  private readonly generated: GeneratedText | null;
  private readonly lines: SseLineSplitter;
  private readonly filter: SseStripFilter | null;
  /** Data of the current event (data lines joined by `\n`), null when it has none yet. */
  private data: string | null = null;
  /** The current event lost a line to the bound: its data is not read. */
  private broken = false;
  /** The current event has a complete line (of any field, or a comment): it began. */
  private eventBegun = false;
  /** Data of passed events not parsed yet, in order (see the header comment), and its characters. */
  private held: string[] = [];
  private heldChars = 0;
  /** Non-null: the pod reports its count; past the bound events are dropped, each estimated at this. */
  private readonly tokensPerEvent: number | null;
  /** Data of the last event read (not `[DONE]`), until `[DONE]` or the end tests it for an error. */
  private lastData: string | null = null;
  /** Events dropped unread (tokensPerEvent, past the bound), not yet handed to `generated`. */
  private dropped = 0;
  /** Past the bound with tokensPerEvent: events that can hold no usage are dropped, not held. */
  private dropping = false;

  /**
   * `tokensPerEvent`: null, every event is read (past the bound as it passes); a number, the pod
   * reports its count and events past the bound are dropped, each estimated at this many tokens
   * should no count come (see the header comment).
   */
  constructor(options: SseUsageOptions, generated: GeneratedText | null = null, tokensPerEvent: number | null = null) {
    this.generated = generated;
    const max = options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
    this.lines = new SseLineSplitter(max);
    this.filter = options.stripUsageChunk ? new SseStripFilter(max, USAGE_KEY) : null;
    this.tokensPerEvent = tokensPerEvent;
  }

  /** `usage.prompt_tokens` of the last event that carried usage, or null. */
  get promptTokens(): number | null { return this.seen.promptTokens; }
  /** `usage.completion_tokens` of the last event that carried usage, or null. */
  get completionTokens(): number | null { return this.seen.completionTokens; }
  /** Concatenated generated text (`choices[].text` / `choices[].delta.content`) of all events, when no GeneratedText was given. */
  get text(): string { return this.seen.text; }
  /** Number of events removed from the output (0 or 1 in a well-formed stream). */
  get strippedEvents(): number { return this.filter === null ? 0 : this.filter.strippedEvents; }
  /** Number of lines longer than maxEventBytes, skipped unparsed. */
  get skippedLines(): number { return this.lines.skippedLines; }

  /** Events dropped unread so far (see the constructor's `tokensPerEvent`). */
  droppedEvents = 0;
  /** StreamUsageReader: the message of the pod's own error event, the first the stream carried, or null. */
  podError: string | null = null;
  /** StreamUsageReader: events that could carry text (JSON objects without usage) before the count came. */
  textEvents = 0;
  /** StreamUsageReader: the `[DONE]` event came. */
  finished = false;

  /** StreamUsageReader: the bytes so far end within a line, or within an event that has data or lost a line. */
  get endsInEvent(): boolean {
    return this.lines.midLine || this.broken || this.data !== null;
  }

  usage(): AnswerUsage {
    this.readHeld();
    this.handDropped();
    const s = this.seen;
    return { promptTokens: s.promptTokens, completionTokens: s.completionTokens, text: s.text, generated: this.generated };
  }

  push(chunk: Buffer): Buffer {
    const filter = this.filter;
    if (chunk.length === 0) return filter === null ? chunk : EMPTY;
    if (filter === null) {
      this.lines.push(chunk, this);
      return chunk;
    }
    filter.begin(chunk);
    this.lines.push(chunk, this);
    return filter.finish();
  }

  end(): Buffer {
    this.lines.end(this);
    const action = this.endEvent();
    this.testLastEvent();
    this.readHeld();
    const filter = this.filter;
    if (filter === null) return EMPTY;
    const out = action === CUT ? filter.endRewritten(withoutUsage) : filter.end(action === DROP);
    this.readCutUsage(filter);
    return out;
  }

  /**
   * StreamUsageReader: the bytes that end the stream forwarded so far with `event` (a whole event):
   * `event` when they end with a whole event (in strip mode always, but within an event past the
   * bound, forwarded as it comes: a partial event is held back, and is not forwarded now); a
   * blank line first when they end with complete lines of an event that has no data yet (a
   * comment, an `event:` field), which the blank line ends without dispatching anything; null when
   * they end within a line, or within an event that has data (which `event` would join or cut).
   */
  closingEvent(event: Buffer): Buffer | null {
    const filter = this.filter;
    if (filter !== null) return filter.midEvent ? null : event;
    if (this.lines.midLine || this.broken || this.data !== null) return null;
    return this.eventBegun ? Buffer.concat([BLANK_LINE, event]) : event;
  }

  // SseLineSink: called by the splitter.
  line(buf: Buffer, start: number, end: number): void {
    this.eventBegun = true;
    const value = dataValue(buf, start, end);
    if (value !== null) this.data = this.data === null ? value : `${this.data}\n${value}`;
    // Another field or a comment: only one that may be named `error` is read further.
    else if (buf[start] === 0x65 /* e */ && buf[start + 1] === 0x72 /* r */ && this.podError === null) this.readErrorField(buf, start, end);
  }

  blank(next: number): void {
    this.eventBegun = false;
    const action = this.endEvent();
    const filter = this.filter;
    if (filter === null) return;
    if (action === CUT) filter.eventEndRewritten(next, withoutUsage);
    else filter.eventEnd(next, action === DROP);
    if (filter.cutValue !== null) this.readCutUsage(filter);
  }

  eventTail(n: number): void {
    if (this.filter !== null) this.filter.eventTail(n);
  }

  lineSkipped(): void {
    this.broken = true;
    this.eventBegun = true;
    this.data = null;
  }

  /** Reads the finished event's data; returns what strip mode does with it (KEEP in keep mode). */
  private endEvent(): EventAction {
    const data = this.data;
    this.data = null;
    if (this.broken) {
      this.broken = false;
      return KEEP;
    }
    if (data === null) return KEEP;
    if (data.length === DONE.length && data === DONE) {
      this.finished = true;
      this.testLastEvent();
    } else if (this.podError === null) {
      if (this.opensWithError(data)) this.podError = this.errorMessage(data);
      else this.lastData = data;
    }
    const generated = this.generated;
    if (generated === null) {
      const event = parseEvent(data);
      return event === null ? KEEP : this.actionOf(event, data, null);
    }
    if (!mayCarryUsage(data)) {
      // Neither usage nor the usage chunk: only its text matters, and only if no completion count comes.
      if (this.seen.completionTokens !== null) return KEEP; // counted by the backend: text is stopped
      const isObject = startsObject(data); // what can carry generated text (not `[DONE]`)
      if (isObject) this.textEvents++;
      if (this.dropping) {
        if (isObject) {
          this.dropped++;
          this.droppedEvents++;
        }
        return KEEP;
      }
      this.held.push(data);
      this.heldChars += data.length;
      if (this.heldChars > HELD_EVENT_CHARS) {
        if (this.tokensPerEvent !== null) {
          this.dropping = true;
          const objects = countObjects(this.held);
          this.dropped += objects;
          this.droppedEvents += objects;
          this.dropHeld();
        } else {
          this.readHeld();
        }
      }
      return KEEP;
    }
    const event = parseEvent(data);
    if (event === null) return KEEP;
    this.settleHeld(event);
    return this.actionOf(event, data, generated);
  }

  /**
   * The usage cut from an event past the bound as it passed (that event's line was too long to be
   * read here): read as that event's usage (its top level: what the counts need).
   */
  private readCutUsage(filter: SseStripFilter): void {
    const value = filter.cutValue;
    if (value === null) return;
    filter.cutValue = null;
    const event = parseEvent(`{"usage":${value.toString('utf8')}}`);
    if (event === null) return;
    this.settleHeld(event);
    this.applyEvent(event, this.generated);
  }

  /**
   * applyEvent, then: DROP the usage-only chunk; in strip mode, CUT the usage members of another
   * event that sets it, to anything (an object, a number, a string...) - also when it reads as null
   * but names it more than once, another one set (`data`: a plain `"usage"` key set, or a key that
   * may be spelled with escapes; the cut then finds whether one is set). Only `"usage": null`
   * stays.
   */
  private actionOf(event: StreamEvent, data: string, text: GeneratedText | null): EventAction {
    if (this.applyEvent(event, text)) return DROP;
    if (this.filter === null) return KEEP;
    const usage = event.usage;
    if (usage === undefined) return KEEP;
    return usage !== null || setsUsageKey(data) || escapesUsageLetter(data) ? CUT : KEEP;
  }

  /**
   * The event's data opens as the pod's own error event does (a cheap test on its first bytes,
   * made on every event). The Completions/Chat shapes; another API's shape overrides this and
   * `errorMessage`.
   */
  protected opensWithError(data: string): boolean {
    return opensWithError(data);
  }

  /** The message of an event that `opensWithError`, or null when it says no error after all. */
  protected errorMessage(data: string): string | null {
    return errorEventMessage(data);
  }

  /**
   * The message of the stream's last event (before `[DONE]` or its end) when it is an error event
   * whose `error` member is not its first, or null. The Completions/Chat shape; another API's
   * shape overrides this.
   */
  protected lastEventError(data: string): string | null {
    return lastEventErrorMessage(data);
  }

  /** `[DONE]` came, or the stream ended: its last event before is tested once for an error. */
  private testLastEvent(): void {
    const data = this.lastData;
    if (data === null) return;
    this.lastData = null;
    if (this.podError === null) this.podError = this.lastEventError(data);
  }

  /** A line of another field than `data` that begins as `error` does: llama.cpp's error field. */
  private readErrorField(buf: Buffer, start: number, end: number): void {
    const value = fieldValue(buf, start, end, ERROR_FIELD);
    if (value !== null) this.podError = errorFieldMessage(value);
  }

  /**
   * The event reports the output count: the text is not needed any more. The Completions/Chat
   * shape (`usage.completion_tokens`); another API's shape overrides this and `applyEvent`.
   */
  protected reportsCompletion(event: StreamEvent): boolean {
    return reportsCompletion(event);
  }

  /**
   * Reads one parsed event into `seen`, its text to `text` (into `seen.text` when null); true
   * when it is the usage-only chunk (to strip).
   */
  protected applyEvent(event: StreamEvent, text: GeneratedText | null): boolean {
    return applyEvent(event, this.seen, text);
  }

  /** parseEvent then applyEvent: data that is not a JSON object is skipped (false). */
  private readEvent(data: string, text: GeneratedText | null): boolean {
    const event = parseEvent(data);
    return event !== null && this.applyEvent(event, text);
  }

  /**
   * Before an event that may carry usage is applied: the events held or dropped unread before it
   * are not needed when it reports the completion count; else their text is read, and the dropped
   * ones' estimate handed on.
   */
  private settleHeld(event: StreamEvent): void {
    if (this.reportsCompletion(event)) {
      this.dropHeld();
      this.dropped = 0;
    } else {
      this.readHeld();
      this.handDropped();
    }
  }

  /** The events dropped unread go to `generated` as an estimate, unless the count came. */
  private handDropped(): void {
    const n = this.dropped;
    if (n === 0) return;
    this.dropped = 0;
    if (this.seen.completionTokens === null) this.generated?.uncounted(Math.round(n * this.tokensPerEvent!));
  }

  /** Parses the held events in order, handing their text on. */
  private readHeld(): void {
    if (this.held.length === 0) return;
    const held = this.held;
    this.held = [];
    this.heldChars = 0;
    for (let i = 0; i < held.length; i++) this.readEvent(held[i], this.generated);
  }

  private dropHeld(): void {
    if (this.held.length === 0) return;
    this.held = [];
    this.heldChars = 0;
  }
}

/** Event data that are JSON objects. */
function countObjects(data: readonly string[]): number {
  let n = 0;
  for (let i = 0; i < data.length; i++) if (startsObject(data[i])) n++;
  return n;
}
