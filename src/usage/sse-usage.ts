/**
 * Scans an OpenAI-style server-sent-event stream as it passes through the router: learns the usage
 * the backend reports and the generated text, and optionally removes the extra usage chunk (the
 * event with `usage` set and empty `choices`) that the router asked for on the client's behalf with
 * `stream_options.include_usage`.
 *
 * Bytes may arrive split anywhere (inside a UTF-8 character, between `\r` and `\n`). Line ends are
 * found on bytes (`\n` and `\r` never occur inside a multi-byte UTF-8 sequence), lines are decoded
 * only once they are complete.
 *
 * - keep mode (`stripUsageChunk: false`): `push` returns the very chunk it was given; nothing waits.
 * - strip mode: `push` returns every complete event at once and holds only the current partial
 *   event, which is needed to decide whether it is the usage chunk. Everything other than that
 *   chunk is forwarded byte for byte.
 */

import { choicesText, tokenCount } from './choice-text.js';

const LF = 0x0a;
const CR = 0x0d;
const EMPTY = Buffer.alloc(0);

/** Default bound on the bytes held for one partial event (strip mode) or one partial line. */
export const DEFAULT_MAX_EVENT_BYTES = 1024 * 1024;

export interface SseUsageOptions {
  /** Remove the usage-only event (usage set, `choices: []`) from the forwarded bytes. */
  stripUsageChunk: boolean;
  /**
   * Most bytes held back for one partial event (strip mode) or kept to parse one partial line.
   * A longer event is forwarded as it comes and never stripped; a longer line is not parsed.
   * Default 1 MiB.
   */
  maxEventBytes?: number;
}

export class SseUsageScanner {
  /** `usage.prompt_tokens` of the last event that carried usage, or null. */
  promptTokens: number | null = null;
  /** `usage.completion_tokens` of the last event that carried usage, or null. */
  completionTokens: number | null = null;
  /** Concatenated generated text (`choices[].text` / `choices[].delta.content`) of all events. */
  text = '';
  /** Number of events removed from the output (0 or 1 in a well-formed stream). */
  strippedEvents = 0;
  /** Number of lines longer than maxEventBytes, skipped unparsed. */
  skippedLines = 0;

  private readonly strip: boolean;
  private readonly maxEventBytes: number;
  /**
   * Unconsumed bytes. Keep mode, or strip mode while `passing`: the partial line, already
   * forwarded, kept to parse it. Strip mode otherwise: the partial event, held back.
   */
  private pending: Buffer[] = [];
  private pendingLength = 0;
  /** Offset in the pending bytes where the partial (unterminated) line starts. */
  private lineOffset = 0;
  /** The previous chunk ended with `\r`: a `\n` starting the next chunk completes that line end. */
  private skipLF = false;
  /** The event ended by that `\r` was stripped, so its completing `\n` must be dropped too. */
  private skipLFStripped = false;
  /** Strip mode: the current event outgrew maxEventBytes and is forwarded as it comes. */
  private passing = false;
  /** The current line outgrew maxEventBytes: its bytes are neither held nor parsed. */
  private longLine = false;
  /** The current event lost a line to `longLine`: its data is not parsed. */
  private broken = false;
  /** Data of the current event (data lines joined by `\n`), null when it has none yet. */
  private data: string | null = null;

  constructor(options: SseUsageOptions) {
    this.strip = options.stripUsageChunk;
    const max = options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
    if (!Number.isInteger(max) || max < 1) throw new RangeError(`maxEventBytes must be a positive integer, got ${max}`);
    this.maxEventBytes = max;
  }

  /** Feeds upstream bytes; returns the bytes to forward to the client now. */
  push(chunk: Buffer): Buffer {
    if (chunk.length === 0) return this.strip ? EMPTY : chunk;
    let from = 0;
    let dropLF = false;
    if (this.skipLF) {
      // A `\n` completing a `\r` line end seen at the end of the previous chunk is no new line end.
      this.skipLF = false;
      if (chunk[0] === LF) {
        from = 1;
        dropLF = this.strip && this.pendingLength === 0 && this.skipLFStripped;
      }
    } else if (this.longLine) {
      from = this.skipLongLine(chunk);
      if (from === chunk.length) return chunk; // the long line goes on (or just ended): all forwarded
    }
    if (!this.strip) {
      this.pushKeep(chunk, from);
      return chunk;
    }
    return this.bound(this.pushStrip(chunk, from, dropLF));
  }

  /** Flushes what is left at the end of the stream (a last event without its blank line). */
  end(): Buffer {
    const rest = this.takePending();
    const held = this.strip && !this.passing;
    const lineStart = held ? this.lineOffset : 0;
    this.skipLF = false;
    this.passing = false;
    this.longLine = false;
    this.lineOffset = 0;
    if (lineStart < rest.length) this.line(rest, lineStart, rest.length);
    const usageOnly = this.dispatch();
    if (!held || rest.length === 0) return EMPTY;
    if (usageOnly) {
      this.strippedEvents++;
      return EMPTY;
    }
    return rest;
  }

  /** In a too-long line: returns where the bytes after its end start (chunk.length if none). */
  private skipLongLine(chunk: Buffer): number {
    const lf = chunk.indexOf(LF);
    const cr = chunk.indexOf(CR);
    if (lf === -1 && cr === -1) return chunk.length;
    this.longLine = false;
    if (cr === -1 || (lf !== -1 && lf < cr)) return lf + 1;
    if (cr + 1 === chunk.length) {
      this.skipLF = true;
      this.skipLFStripped = false;
      return chunk.length;
    }
    return chunk[cr + 1] === LF ? cr + 2 : cr + 1;
  }

  private pushKeep(chunk: Buffer, from: number): void {
    if (!hasLineEnd(chunk, from)) {
      this.hold(chunk, from);
    } else {
      // Pending bytes are a partial line, which neither `\r` nor a long line ended: `from` is 0 then.
      const hadPending = this.pendingLength !== 0;
      const buf = hadPending ? this.joinPending(chunk) : chunk;
      this.clearPending();
      const rest = this.scanLines(buf, hadPending ? 0 : from, null);
      this.hold(buf, rest);
    }
    this.boundLine();
  }

  private pushStrip(chunk: Buffer, from: number, dropLF: boolean): Buffer {
    const hadPending = this.pendingLength !== 0;
    if (!hasLineEnd(chunk, from)) {
      if (this.passing) {
        this.hold(chunk, from);
        return chunk;
      }
      if (hadPending) {
        this.hold(chunk, 0);
        this.lineOffset += from;
        return EMPTY;
      }
      this.hold(chunk, from);
      this.lineOffset = 0;
      return from !== 0 && !dropLF ? chunk.subarray(0, from) : EMPTY;
    }
    const buf = hadPending ? this.joinPending(chunk) : chunk;
    // While passing, pending bytes were forwarded already.
    const sent = this.passing ? this.pendingLength : 0;
    const lineStart = hadPending ? this.lineOffset + from : from;
    const cut: StripCut = {
      buf,
      forwardFrom: dropLF ? from : sent,
      eventStart: hadPending ? 0 : from,
      parts: null,
    };
    this.clearPending();
    const rest = this.scanLines(buf, lineStart, cut);
    // Bytes from `holdFrom` on stay back; while still passing only the partial line, already sent.
    const holdFrom = this.passing ? buf.length : cut.eventStart;
    this.hold(buf, this.passing ? rest : cut.eventStart);
    this.lineOffset = this.passing ? 0 : rest - cut.eventStart;
    const tail = holdFrom > cut.forwardFrom ? buf.subarray(cut.forwardFrom, holdFrom) : EMPTY;
    if (cut.parts === null) return tail;
    if (tail.length !== 0) cut.parts.push(tail);
    return cut.parts.length === 1 ? cut.parts[0] : Buffer.concat(cut.parts);
  }

  /** Strip mode: a held event past the bound is sent now and the rest of it passes through. */
  private bound(out: Buffer): Buffer {
    if (!this.passing && this.pendingLength > this.maxEventBytes) {
      const held = this.takePending();
      out = out.length === 0 ? held : Buffer.concat([out, held]);
      this.passing = true;
      this.hold(held, this.lineOffset);
      this.lineOffset = 0;
    }
    this.boundLine();
    return out;
  }

  /** A partial line past the bound is dropped (its bytes were or will be forwarded, unparsed). */
  private boundLine(): void {
    if (this.pendingLength - this.lineOffset <= this.maxEventBytes) return;
    if (this.strip && !this.passing) return; // bound() forwards the held event first
    this.clearPending();
    this.lineOffset = 0;
    this.longLine = true;
    this.broken = true;
    this.data = null;
    this.skippedLines++;
  }

  /**
   * Processes every complete line of `buf` from `lineStart`; returns where the unterminated rest
   * starts. With `cut` (strip mode) records event boundaries and removes usage-only events.
   */
  private scanLines(buf: Buffer, lineStart: number, cut: StripCut | null): number {
    const length = buf.length;
    let nextLF = buf.indexOf(LF, lineStart);
    let nextCR = buf.indexOf(CR, lineStart);
    while (nextLF !== -1 || nextCR !== -1) {
      let lineEnd: number;
      let next: number;
      if (nextCR === -1 || (nextLF !== -1 && nextLF < nextCR)) {
        lineEnd = nextLF;
        next = nextLF + 1;
      } else {
        lineEnd = nextCR;
        if (nextCR + 1 < length) {
          next = buf[nextCR + 1] === LF ? nextCR + 2 : nextCR + 1;
        } else {
          next = length;
          this.skipLF = true;
        }
      }
      if (lineEnd > lineStart) {
        this.line(buf, lineStart, lineEnd);
      } else {
        this.endEvent(cut, next);
      }
      lineStart = next;
      if (nextLF !== -1 && nextLF < lineStart) nextLF = buf.indexOf(LF, lineStart);
      if (nextCR !== -1 && nextCR < lineStart) nextCR = buf.indexOf(CR, lineStart);
    }
    return lineStart;
  }

  /** A blank line ending at `next` closes the current event. */
  private endEvent(cut: StripCut | null, next: number): void {
    const usageOnly = this.dispatch();
    if (cut === null) return;
    // An event that was passing through has been partly sent: it can no longer be removed.
    const stripped = usageOnly && !this.passing;
    this.passing = false;
    if (stripped) {
      this.strippedEvents++;
      if (cut.eventStart > cut.forwardFrom) {
        (cut.parts ??= []).push(cut.buf.subarray(cut.forwardFrom, cut.eventStart));
      }
      cut.forwardFrom = next;
    }
    cut.eventStart = next;
    if (this.skipLF) this.skipLFStripped = stripped;
  }

  /** One complete, non-empty line [start, end) of `buf`. Only `data` fields matter here. */
  private line(buf: Buffer, start: number, end: number): void {
    if (end - start < 4 || buf[start] !== 0x64 || buf[start + 1] !== 0x61 || buf[start + 2] !== 0x74 || buf[start + 3] !== 0x61) {
      return;
    }
    let valueStart = start + 4;
    if (valueStart < end) {
      if (buf[valueStart] !== 0x3a) return; // a field named "data…" but longer, e.g. "datafoo:"
      valueStart++;
      if (valueStart < end && buf[valueStart] === 0x20) valueStart++;
    }
    const value = buf.toString('utf8', valueStart, end);
    this.data = this.data === null ? value : `${this.data}\n${value}`;
  }

  /** Reads the finished event's data; returns true when it is a usage-only chunk. */
  private dispatch(): boolean {
    const data = this.data;
    this.data = null;
    if (this.broken) {
      this.broken = false;
      return false;
    }
    if (data === null || data.length === 0 || data.charCodeAt(0) !== 0x7b /* { */) return false;
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      return false;
    }
    if (typeof parsed !== 'object' || parsed === null) return false;
    const event = parsed as { usage?: unknown; choices?: unknown };
    const choices = event.choices;
    if (Array.isArray(choices) && choices.length !== 0) this.text += choicesText(choices);
    const usage = event.usage;
    if (typeof usage !== 'object' || usage === null) return false;
    const counts = usage as { prompt_tokens?: unknown; completion_tokens?: unknown };
    const prompt = tokenCount(counts.prompt_tokens);
    const completion = tokenCount(counts.completion_tokens);
    if (prompt !== null) this.promptTokens = prompt;
    if (completion !== null) this.completionTokens = completion;
    return Array.isArray(choices) && choices.length === 0;
  }

  private hold(buf: Buffer, from: number): void {
    if (from >= buf.length) return;
    // Copy: the caller may reuse its buffer once push returns.
    const copy = Buffer.from(buf.subarray(from));
    this.pending.push(copy);
    this.pendingLength += copy.length;
  }

  private joinPending(chunk: Buffer): Buffer {
    this.pending.push(chunk);
    return Buffer.concat(this.pending, this.pendingLength + chunk.length);
  }

  private takePending(): Buffer {
    const rest = this.pending.length === 1 ? this.pending[0] : Buffer.concat(this.pending, this.pendingLength);
    this.clearPending();
    return rest;
  }

  private clearPending(): void {
    if (this.pending.length !== 0) this.pending = [];
    this.pendingLength = 0;
  }
}

function hasLineEnd(chunk: Buffer, from: number): boolean {
  return chunk.indexOf(LF, from) !== -1 || chunk.indexOf(CR, from) !== -1;
}

/** Strip-mode bookkeeping for one `push`: which byte ranges of `buf` go out. */
interface StripCut {
  buf: Buffer;
  /** Start of the bytes not yet emitted. */
  forwardFrom: number;
  /** Start of the current (not yet complete) event. */
  eventStart: number;
  /** Emitted segments, once an event had to be cut out; null while the output is one range. */
  parts: Buffer[] | null;
}
