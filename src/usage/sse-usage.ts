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

export interface SseUsageOptions {
  /** Remove the usage-only event (usage set, `choices: []`) from the forwarded bytes. */
  stripUsageChunk: boolean;
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

  private readonly strip: boolean;
  /** Unconsumed bytes: keep mode, the partial line; strip mode, the partial event. */
  private pending: Buffer[] = [];
  private pendingLength = 0;
  /** Offset in the pending bytes where the partial (unterminated) line starts (strip mode). */
  private lineOffset = 0;
  /** The previous chunk ended with `\r`: a `\n` starting the next chunk completes that line end. */
  private skipLF = false;
  /** The event ended by that `\r` was stripped, so its completing `\n` must be dropped too. */
  private skipLFStripped = false;
  /** Data of the current event (data lines joined by `\n`), null when it has none yet. */
  private data: string | null = null;

  constructor(options: SseUsageOptions) {
    this.strip = options.stripUsageChunk;
  }

  /** Feeds upstream bytes; returns the bytes to forward to the client now. */
  push(chunk: Buffer): Buffer {
    if (chunk.length === 0) return this.strip ? EMPTY : chunk;
    // A `\n` completing a `\r` line end seen at the end of the previous chunk is no new line end.
    let skip = 0;
    if (this.skipLF) {
      this.skipLF = false;
      if (chunk[0] === LF) skip = 1;
    }
    if (this.strip) return this.pushStrip(chunk, skip);
    this.pushKeep(chunk, skip);
    return chunk;
  }

  /** Flushes what is left at the end of the stream (a last event without its blank line). */
  end(): Buffer {
    const rest = this.takePending();
    this.skipLF = false;
    if (rest.length === 0 && this.data === null) return EMPTY;
    const lineStart = this.strip ? this.lineOffset : 0;
    if (lineStart < rest.length) this.line(rest, lineStart, rest.length);
    const usageOnly = this.dispatch();
    this.lineOffset = 0;
    if (!this.strip) return EMPTY;
    if (usageOnly) {
      this.strippedEvents++;
      return EMPTY;
    }
    return rest;
  }

  private pushKeep(chunk: Buffer, skip: number): void {
    if (!hasLineEnd(chunk, skip)) {
      this.hold(chunk, skip);
      return;
    }
    // Pending bytes are a partial line, which a `\r` never ends, so `skip` is 0 when they exist.
    const hadPending = this.pendingLength !== 0;
    const buf = hadPending ? this.joinPending(chunk) : chunk;
    this.clearPending();
    const rest = this.scanLines(buf, hadPending ? 0 : skip, null);
    this.hold(buf, rest);
  }

  private pushStrip(chunk: Buffer, skip: number): Buffer {
    const hadPending = this.pendingLength !== 0;
    // Without pending bytes the previous event is complete; a skipped `\n` still belongs to it.
    const dropLF = skip === 1 && !hadPending && this.skipLFStripped;
    if (!hasLineEnd(chunk, skip)) {
      if (hadPending) {
        this.hold(chunk, 0);
        this.lineOffset += skip;
        return EMPTY;
      }
      this.hold(chunk, skip);
      this.lineOffset = 0;
      return skip === 1 && !dropLF ? chunk.subarray(0, 1) : EMPTY;
    }
    const buf = hadPending ? this.joinPending(chunk) : chunk;
    const lineStart = hadPending ? this.lineOffset + skip : skip;
    const cut: StripCut = { buf, forwardFrom: dropLF ? 1 : 0, eventStart: hadPending ? 0 : skip, parts: null };
    this.clearPending();
    const rest = this.scanLines(buf, lineStart, cut);
    this.hold(buf, cut.eventStart);
    this.lineOffset = rest - cut.eventStart;
    const tail = cut.eventStart > cut.forwardFrom ? buf.subarray(cut.forwardFrom, cut.eventStart) : EMPTY;
    if (cut.parts === null) return tail;
    if (tail.length !== 0) cut.parts.push(tail);
    return cut.parts.length === 1 ? cut.parts[0] : Buffer.concat(cut.parts);
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
    const stripped = usageOnly;
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
