/**
 * Removes whole events from a server-sent-event stream as it passes through, or forwards one
 * rewritten: the caller says at each event's end whether to drop it, or hands a rewrite of its
 * bytes. Forwards every complete event at once and holds back only the current partial event, up
 * to a bound; a longer event is forwarded as it comes and never removed or rewritten, but for the
 * members named `cutKey` (when given), which are cut from its data's JSON as it passes
 * (sse-member-stream-cut.ts; the top level of the last one's value is `cutValue`). Everything not removed or
 * rewritten is forwarded byte for byte.
 *
 * Per chunk: begin(chunk), then the splitter's event reports (eventEnd or eventEndRewritten,
 * eventTail), then finish().
 */
import { checkMaxBytes, DEFAULT_MAX_EVENT_BYTES } from './sse-lines.js';
import { SseMemberStreamCut } from './sse-member-stream-cut.js';
import { Buffer } from 'node:buffer';

const EMPTY = Buffer.alloc(0);

export class SseStripFilter {
  /** Number of events removed from the output. */
  strippedEvents = 0;
  /** The top level (JSON text: SseMemberStreamCut.value) of the value of the last member cut from an event past the bound; the caller takes it (sets null). */
  cutValue: Buffer | null = null;

  private readonly maxEventBytes: number;
  private readonly cutKey: Buffer | null;
  /** The cut of the current event past the bound, when a key is cut. */
  private cut: SseMemberStreamCut | null = null;
  /** Bytes of the current event from earlier chunks, held back (copied). */
  private held: Buffer[] = [];
  private heldLength = 0;
  /** The current event outgrew the bound: it is forwarded as it comes. */
  private passing = false;
  /** The last event that ended was removed. */
  private lastStripped = false;
  private chunk: Buffer = EMPTY;
  /** Start of the current event in the chunk. */
  private eventStart = 0;
  /** Output of this chunk: earlier parts, then the chunk range [outFrom, outTo). */
  private parts: Buffer[] = [];
  private outFrom = 0;
  private outTo = 0;

  constructor(maxEventBytes: number = DEFAULT_MAX_EVENT_BYTES, cutKey: Buffer | null = null) {
    this.maxEventBytes = checkMaxBytes(maxEventBytes);
    this.cutKey = cutKey;
  }

  /**
   * The bytes forwarded so far end within an event: one past the bound, forwarded as it comes
   * (else they end with a whole event: a partial one is held back).
   */
  get midEvent(): boolean {
    return this.passing;
  }

  begin(chunk: Buffer): void {
    this.chunk = chunk;
    this.eventStart = 0;
    this.outFrom = 0;
    this.outTo = 0;
  }

  /** The event ended before `next` in the chunk; `drop`: remove it (unless it was partly sent). */
  eventEnd(next: number, drop: boolean): void {
    const stripped = drop && !this.passing;
    if (stripped) {
      this.strippedEvents++;
      this.clearHeld();
    } else {
      if (this.heldLength !== 0) this.emitHeld();
      this.passOn(this.eventStart, next);
      this.endCut();
    }
    this.passing = false;
    this.lastStripped = stripped;
    this.eventStart = next;
  }

  /**
   * The event ended before `next` in the chunk; `rewrite` is handed its bytes and returns what to
   * forward instead, or null to forward it as it came. An event partly forwarded already (past the
   * bound) goes on as it came, unread.
   */
  eventEndRewritten(next: number, rewrite: (event: Buffer) => Buffer | null): void {
    if (this.passing) {
      this.eventEnd(next, false);
      return;
    }
    const own = this.chunk.subarray(this.eventStart, next);
    const out = rewrite(this.heldLength === 0 ? own : Buffer.concat([...this.held, own], this.heldLength + own.length));
    if (out === null) {
      this.eventEnd(next, false);
      return;
    }
    this.clearHeld();
    if (this.outTo > this.outFrom) this.parts.push(this.chunk.subarray(this.outFrom, this.outTo));
    this.parts.push(out);
    this.outFrom = this.outTo = 0;
    this.lastStripped = false;
    this.eventStart = next;
  }

  /** The first `n` bytes of the chunk belong to the event that ended in the previous chunk. */
  eventTail(n: number): void {
    if (!this.lastStripped) this.emitRange(0, n);
    this.eventStart = n;
  }

  /** After the chunk's reports: holds the partial event (or forwards it, past the bound); returns the output. */
  finish(): Buffer {
    const chunk = this.chunk;
    if (this.eventStart < chunk.length) {
      if (this.passing) this.passOn(this.eventStart, chunk.length);
      else this.hold(chunk.subarray(this.eventStart));
    }
    if (!this.passing && this.heldLength > this.maxEventBytes) {
      if (this.cutKey !== null) this.cut = new SseMemberStreamCut(this.cutKey);
      this.emitHeld();
      this.passing = true;
    }
    this.chunk = EMPTY;
    return this.takeOutput(chunk);
  }

  /** End of the stream: the held last event (without its blank line) unless `drop`. */
  end(drop: boolean): Buffer {
    const wasPassing = this.passing;
    this.passing = false;
    if (wasPassing) return this.endCut() ? this.takeOutput(EMPTY) : EMPTY;
    if (this.heldLength === 0) return EMPTY;
    const rest = this.held.length === 1 ? this.held[0] : Buffer.concat(this.held, this.heldLength);
    this.clearHeld();
    if (drop) {
      this.strippedEvents++;
      return EMPTY;
    }
    return rest;
  }

  /** End of the stream: the held last event (without its blank line) as `rewrite` returns it (null: as it came). */
  endRewritten(rewrite: (event: Buffer) => Buffer | null): Buffer {
    const rest = this.end(false);
    return rest.length === 0 ? rest : rewrite(rest) ?? rest;
  }

  /** Bytes [from, to) of the chunk of an event past the bound: through the cut, if any. */
  private passOn(from: number, to: number): void {
    const cut = this.cut;
    if (cut === null) {
      this.emitRange(from, to);
      return;
    }
    this.flushRange();
    if (to > from) cut.push(this.chunk.subarray(from, to), this.parts);
  }

  /** The event past the bound ended: the cut's held bytes go out and its value is kept. True when there was a cut. */
  private endCut(): boolean {
    const cut = this.cut;
    if (cut === null) return false;
    this.cut = null;
    this.flushRange();
    cut.end(this.parts);
    if (cut.value !== null) this.cutValue = cut.value;
    return true;
  }

  /** The chunk range so far goes to the parts. */
  private flushRange(): void {
    if (this.outTo > this.outFrom) this.parts.push(this.chunk.subarray(this.outFrom, this.outTo));
    this.outFrom = this.outTo = 0;
  }

  private emitRange(from: number, to: number): void {
    if (from >= to) return;
    if (this.outTo > this.outFrom) {
      if (this.outTo === from) { // contiguous: one range
        this.outTo = to;
        return;
      }
      this.parts.push(this.chunk.subarray(this.outFrom, this.outTo));
    }
    this.outFrom = from;
    this.outTo = to;
  }

  /** Held bytes go out before anything of the chunk (through the cut, if any). */
  private emitHeld(): void {
    this.flushRange();
    const cut = this.cut;
    for (const b of this.held) {
      if (cut === null) this.parts.push(b);
      else cut.push(b, this.parts);
    }
    this.clearHeld();
  }

  /** The chunk's output: the chunk itself when all of it goes out (the usual case), else its range after what was held. */
  private takeOutput(chunk: Buffer): Buffer {
    const from = this.outFrom;
    const to = this.outTo;
    const range = to <= from ? EMPTY : from === 0 && to === chunk.length ? chunk : chunk.subarray(from, to);
    if (this.parts.length === 0) return range;
    if (range.length !== 0) this.parts.push(range);
    const out = this.parts.length === 1 ? this.parts[0] : Buffer.concat(this.parts);
    this.parts = [];
    return out;
  }

  private hold(bytes: Buffer): void {
    // Copy: the caller may reuse its buffer once push returns.
    const copy = Buffer.from(bytes);
    this.held.push(copy);
    this.heldLength += copy.length;
  }

  private clearHeld(): void {
    if (this.held.length !== 0) this.held = [];
    this.heldLength = 0;
  }
}
