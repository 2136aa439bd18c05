/**
 * Server-sent events, protocol-neutral: splits bytes into complete lines and events as they pass
 * through. Bytes may arrive split anywhere (inside a UTF-8 character, between `\r` and `\n`);
 * line ends (`\n`, `\r\n`, `\r`) are found on bytes (`\n` and `\r` never occur inside a multi-byte
 * UTF-8 sequence). Only a partial line is held, up to a bound; a longer line is skipped unread.
 */
import { Buffer } from 'node:buffer';

const LF = 0x0a;
const CR = 0x0d;

/** Default bound on the bytes held for one partial line (and, by the strip filter, one partial event). */
export const DEFAULT_MAX_EVENT_BYTES = 1024 * 1024;

/** What the splitter reports, in stream order. */
export interface SseLineSink {
  /** One complete, non-empty line: bytes [start, end) of `buf` (the chunk, or the line joined). */
  line(buf: Buffer, start: number, end: number): void;
  /** A blank line: the current event is complete. `next`: where the bytes after it start in the chunk. */
  blank(next: number): void;
  /** The first `n` bytes of this chunk finish the `\r\n` of the blank line that ended the previous chunk. */
  eventTail(n: number): void;
  /** A line longer than the bound was skipped unread: the current event lost a line. */
  lineSkipped(): void;
}

export function checkMaxBytes(max: number): number {
  if (!Number.isInteger(max) || max < 1) throw new RangeError(`maxEventBytes must be a positive integer, got ${max}`);
  return max;
}

export class SseLineSplitter {
  /** Number of lines longer than the bound, skipped unread. */
  skippedLines = 0;

  private readonly maxLineBytes: number;
  /** The partial (unterminated) line, copied. */
  private partial: Buffer[] = [];
  private partialLength = 0;
  /** The previous chunk ended with `\r`: a `\n` starting the next chunk completes that line end. */
  private skipLF = false;
  /** ...and that `\r` ended a blank line (the end of an event). */
  private skipLFEndsEvent = false;
  /** The current line outgrew the bound: its bytes are dropped up to its end. */
  private longLine = false;

  constructor(maxLineBytes: number = DEFAULT_MAX_EVENT_BYTES) {
    this.maxLineBytes = checkMaxBytes(maxLineBytes);
  }

  /** The bytes fed so far end within a line (one held, or one past the bound being skipped). */
  get midLine(): boolean {
    return this.partialLength !== 0 || this.longLine;
  }

  /** Feeds one chunk (not empty); reports its complete lines and events to `sink`. */
  push(chunk: Buffer, sink: SseLineSink): void {
    let from = 0;
    if (this.skipLF) {
      this.skipLF = false;
      if (chunk[0] === LF) {
        from = 1;
        if (this.skipLFEndsEvent) sink.eventTail(1);
      }
    } else if (this.longLine) {
      from = this.skipLongLine(chunk);
      if (from === chunk.length) return;
    }
    if (this.partialLength !== 0) {
      const end = lineEnd(chunk, from);
      if (end === -1) {
        this.hold(chunk, from);
        this.boundLine(sink);
        return;
      }
      this.partial.push(chunk.subarray(from, end));
      const line = Buffer.concat(this.partial, this.partialLength + end - from);
      this.clearPartial();
      sink.line(line, 0, line.length);
      from = this.afterLineEnd(chunk, end, false);
    }
    const rest = this.scan(chunk, from, sink);
    this.hold(chunk, rest);
    this.boundLine(sink);
  }

  /** End of the stream: reports a last line that lacks its line end. */
  end(sink: SseLineSink): void {
    this.skipLF = false;
    this.longLine = false;
    if (this.partialLength === 0) return;
    const line = this.partial.length === 1 ? this.partial[0] : Buffer.concat(this.partial, this.partialLength);
    this.clearPartial();
    sink.line(line, 0, line.length);
  }

  /** Reports every complete line of `buf` from `lineStart`; returns where the unterminated rest starts. */
  private scan(buf: Buffer, lineStart: number, sink: SseLineSink): number {
    let nextLF = buf.indexOf(LF, lineStart);
    let nextCR = buf.indexOf(CR, lineStart);
    while (nextLF !== -1 || nextCR !== -1) {
      const end = nextCR === -1 || (nextLF !== -1 && nextLF < nextCR) ? nextLF : nextCR;
      const blank = end === lineStart;
      const next = this.afterLineEnd(buf, end, blank);
      if (blank) sink.blank(next);
      else sink.line(buf, lineStart, end);
      lineStart = next;
      if (nextLF !== -1 && nextLF < lineStart) nextLF = buf.indexOf(LF, lineStart);
      if (nextCR !== -1 && nextCR < lineStart) nextCR = buf.indexOf(CR, lineStart);
    }
    return lineStart;
  }

  /** Where the bytes after the line end at `end` start; a `\r` ending the chunk may be half of `\r\n`. */
  private afterLineEnd(buf: Buffer, end: number, blank: boolean): number {
    if (buf[end] === LF) return end + 1;
    if (end + 1 < buf.length) return buf[end + 1] === LF ? end + 2 : end + 1;
    this.skipLF = true;
    this.skipLFEndsEvent = blank;
    return buf.length;
  }

  /** In a too-long line: returns where the bytes after its end start (chunk.length if none). */
  private skipLongLine(chunk: Buffer): number {
    const end = lineEnd(chunk, 0);
    if (end === -1) return chunk.length;
    this.longLine = false;
    return this.afterLineEnd(chunk, end, false);
  }

  /** A partial line past the bound is dropped (its bytes are forwarded all the same, unread). */
  private boundLine(sink: SseLineSink): void {
    if (this.partialLength <= this.maxLineBytes) return;
    this.clearPartial();
    this.longLine = true;
    this.skippedLines++;
    sink.lineSkipped();
  }

  private hold(buf: Buffer, from: number): void {
    if (from >= buf.length) return;
    // Copy: the caller may reuse its buffer once push returns.
    const copy = Buffer.from(buf.subarray(from));
    this.partial.push(copy);
    this.partialLength += copy.length;
  }

  private clearPartial(): void {
    if (this.partial.length !== 0) this.partial = [];
    this.partialLength = 0;
  }
}

/** Index of the first `\r` or `\n` in `buf` from `from`, or -1. */
function lineEnd(buf: Buffer, from: number): number {
  const lf = buf.indexOf(LF, from);
  const cr = buf.indexOf(CR, from);
  if (cr === -1) return lf;
  return lf === -1 || cr < lf ? cr : lf;
}

/**
 * The value of a `data` field line [start, end) of `buf` (one leading space removed), or null
 * when the line is another field or a comment.
 */
export function dataValue(buf: Buffer, start: number, end: number): string | null {
  const valueStart = dataValueStart(buf, start, end);
  return valueStart < 0 ? null : buf.toString('utf8', valueStart, end);
}

/** Where the value of a `data` field line [start, end) of `buf` starts; -1 when the line is another field or a comment. */
export function dataValueStart(buf: Buffer, start: number, end: number): number {
  if (end - start < 4 || buf[start] !== 0x64 || buf[start + 1] !== 0x61 || buf[start + 2] !== 0x74 || buf[start + 3] !== 0x61) {
    return -1;
  }
  let valueStart = start + 4;
  if (valueStart < end) {
    if (buf[valueStart] !== 0x3a) return -1; // a field named "data…" but longer, e.g. "datafoo:"
    valueStart++;
    if (valueStart < end && buf[valueStart] === 0x20) valueStart++;
  }
  return valueStart;
}

/**
 * The value of a field line [start, end) of `buf` named `name` (its bytes; one leading space
 * removed, empty when the line has no colon), or null when the line is another field or a comment.
 */
export function fieldValue(buf: Buffer, start: number, end: number, name: Buffer): string | null {
  const nameEnd = start + name.length;
  if (nameEnd > end) return null;
  for (let i = 0; i < name.length; i++) if (buf[start + i] !== name[i]) return null;
  if (nameEnd === end) return '';
  if (buf[nameEnd] !== 0x3a) return null; // a longer field name
  let valueStart = nameEnd + 1;
  if (valueStart < end && buf[valueStart] === 0x20) valueStart++;
  return buf.toString('utf8', valueStart, end);
}

/**
 * The lines of a complete event `event` (its bytes, line ends included), each as [start, end)
 * without its line end, to `each`; stops when `each` returns false.
 */
export function eachLine(event: Buffer, each: (start: number, end: number) => boolean): void {
  let start = 0;
  while (start < event.length) {
    const end = lineEnd(event, start);
    const stop = end === -1 ? event.length : end;
    if (stop > start && !each(start, stop)) return;
    if (end === -1) return;
    start = event[end] === CR && event[end + 1] === LF ? end + 2 : end + 1;
  }
}
