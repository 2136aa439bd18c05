/**
 * Incremental HTTP/1.1 response parser: status line and headers (raw name/value strings, as
 * received), then a body delimited by content-length, chunked transfer coding (chunk extensions
 * skipped, trailers returned; any other transfer coding is an error) or the end of the connection. Interim 1xx responses are skipped;
 * answers to HEAD and 204/304 have no body. Input may be split at any byte. Body bytes are
 * handed on as views of the input (no copies). Errors are thrown as Http1Error.
 */
import { Http1Error, malformed } from './errors.js';
import { BARE_CR_LF, hasBareCrLf, hasBareLineEnd, HEAD_INCOMPLETE, HeadMarks, headerLines, headersAt, isToken, scanHead, usualNameOfLine } from './head-lines.js';
import { SHORTEST_USUAL_LONG_NAME } from './usual-long-names.js';
import { isUsualHeader } from '../../header-name.js';
import { isAscii } from '../../ascii-text.js';
import { Buffer } from 'node:buffer';

export interface ParserSink {
  /** The final (non-1xx) response head. */
  onHead(status: number, headers: string[]): void;
  onBody(chunk: Buffer): void;
  /** The response is complete; trailers of a chunked body, else null. */
  onEnd(trailers: string[] | null): void;
}

export const enum ParserState {
  Head, Length, ChunkSize, ChunkExt, ChunkSizeLf, ChunkData, ChunkDataCr, ChunkDataLf, Trailer, UntilClose, Done, Stopped,
}

const CR = 13;
const LF = 10;
const HEAD_END = Buffer.from('\r\n\r\n', 'latin1');
const EMPTY_HEADERS: string[] = [];
const DIGITS = /^\d+$/;
/** The largest chunk size read (13 hex digits): a safe integer, whatever is done with it. */
const MAX_CHUNK_SIZE = 2 ** 52 - 1;
/** Digits of a chunk size line, leading zeros included (RFC 9112 allows them): a bound on the line. */
const MAX_SIZE_DIGITS = 64;
const MAX_CHUNK_EXT = 4096;

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  const l = c | 0x20;
  if (l >= 97 && l <= 102) return l - 87;
  return -1;
}

export class ResponseParser {
  state = ParserState.Done;
  status = 0;
  headers: string[] = EMPTY_HEADERS;
  /** Every byte of the final head is ASCII, so its header text is also its UTF-8 (false until known). */
  headAscii = false;
  /** Content-length of the final head, -1 when absent (chunked or close-delimited). */
  contentLength = -1;
  /** False when the connection cannot carry another request after this response. */
  keepAlive = true;
  /** Whether any byte of the response arrived since reset(). */
  sawBytes = false;
  private readonly sink: ParserSink;
  private readonly maxHeaderSize: number;
  private noBody = false;
  private remaining = 0;
  private sizeDigits = 0;
  private extBytes = 0;
  /** A head (or trailer line) split across packets: the bytes so far. */
  private partial: Buffer | null = null;
  private line = '';
  private trailerBytes = 0;
  private trailers: string[] | null = null;
  /** scanHead's marks of the head being read (reused). */
  private readonly marks = new HeadMarks();

  constructor(sink: ParserSink, maxHeaderSize: number) {
    this.sink = sink;
    this.maxHeaderSize = maxHeaderSize;
  }

  /** Ready for the response to a new request; `noBody` for HEAD requests. */
  reset(noBody: boolean): void {
    this.state = ParserState.Head;
    this.status = 0;
    this.headers = EMPTY_HEADERS;
    this.headAscii = false;
    this.contentLength = -1;
    this.keepAlive = true;
    this.sawBytes = false;
    this.noBody = noBody;
    this.partial = null;
    this.line = '';
    this.trailers = null;
    this.trailerBytes = 0;
  }

  /** Stops delivery (the request was aborted from a sink callback). */
  stop(): void {
    this.state = ParserState.Stopped;
  }

  /** Parses `data`; returns how many bytes belong to this response (less than all when it ended early). */
  execute(data: Buffer): number {
    const n = data.length;
    if (n > 0) this.sawBytes = true;
    let i = 0;
    while (i < n) {
      switch (this.state) {
        case ParserState.Head:
          i = this.readHead(data, i);
          break;
        case ParserState.Length: {
          const take = Math.min(this.remaining, n - i);
          this.remaining -= take;
          const chunk = data.subarray(i, i + take);
          i += take;
          this.sink.onBody(chunk);
          if (this.remaining === 0 && this.state === ParserState.Length) return this.end(i);
          break;
        }
        case ParserState.ChunkData: {
          const take = Math.min(this.remaining, n - i);
          this.remaining -= take;
          const chunk = data.subarray(i, i + take);
          i += take;
          if (this.remaining === 0) this.state = ParserState.ChunkDataCr;
          this.sink.onBody(chunk);
          break;
        }
        case ParserState.UntilClose:
          this.sink.onBody(i === 0 ? data : data.subarray(i));
          return n;
        case ParserState.Trailer:
          i = this.readTrailer(data, i);
          break;
        case ParserState.Done:
        case ParserState.Stopped:
          return i;
        default:
          this.chunkFraming(data[i]);
          i++;
      }
    }
    return n;
  }

  /** The connection ended: completes a close-delimited body, else throws. */
  finish(): void {
    if (this.state === ParserState.UntilClose) {
      this.state = ParserState.Done;
      this.sink.onEnd(null);
      return;
    }
    if (this.state === ParserState.Done || this.state === ParserState.Stopped) return;
    throw new Http1Error('HTTP1_PREMATURE_CLOSE', this.sawBytes
      ? 'upstream closed the connection before the response ended'
      : 'upstream closed the connection without answering');
  }

  private end(consumed: number): number {
    this.state = ParserState.Done;
    this.sink.onEnd(this.trailers);
    return consumed;
  }

  private readHead(data: Buffer, i: number): number {
    const prior = this.partial;
    if (prior === null) { // the usual case: a head whole in this packet, read from its bytes
      const end = scanHead(data, i, this.marks);
      if (end >= 0) {
        if (end - i > this.maxHeaderSize) throw tooLarge(this.maxHeaderSize);
        this.parseHead(data.toString('latin1', i, end - 2), this.marks);
        return end;
      }
      if (end === HEAD_INCOMPLETE) {
        if (data.length - i > this.maxHeaderSize) throw tooLarge(this.maxHeaderSize);
        this.partial = i === 0 ? data : data.subarray(i);
        return data.length;
      }
    }
    let buf = data;
    let start = i;
    let from = i;
    if (prior !== null) {
      buf = Buffer.concat([prior, i === 0 ? data : data.subarray(i)]);
      start = 0;
      from = Math.max(0, prior.length - 3);
    }
    const end = buf.indexOf(HEAD_END, from);
    if (end === -1) {
      // Only the bytes not checked before (the last of the earlier ones: a CR, or an LF after one).
      if (hasBareLineEnd(buf, start, prior === null ? start : Math.max(start, prior.length - 1))) throw malformed(BARE_CR_LF);
      if (buf.length - start > this.maxHeaderSize) throw tooLarge(this.maxHeaderSize);
      this.partial = start === 0 ? buf : buf.subarray(start);
      return data.length;
    }
    if (end + 4 - start > this.maxHeaderSize) throw tooLarge(this.maxHeaderSize);
    this.partial = null;
    const consumed = prior === null ? end + 4 : end + 4 - prior.length + i;
    this.parseHead(buf.toString('latin1', start, end + 2), null);
    return consumed;
  }

  /** `text`: the status line and header lines, each ending in CRLF; `marks`: scanHead's, or null to read the lines from the text. */
  private parseHead(text: string, marks: HeadMarks | null): void {
    // A bare CR, LF or NUL anywhere in the head is named first: scanHead sends such a head to the
    // text reading, where statusLineFault or headerLines finds it.
    const eol = text.indexOf('\r\n');
    const minor = text.charCodeAt(7);
    const after = text.charCodeAt(12);
    if (!text.startsWith('HTTP/1.') || (minor !== 48 && minor !== 49) || text.charCodeAt(8) !== 32
      || !(eol === 12 || after === 32)) throw statusLineFault(text, eol);
    let status = 0;
    for (let k = 9; k < 12; k++) {
      const d = text.charCodeAt(k) - 48;
      if (d < 0 || d > 9) throw statusLineFault(text, eol);
      status = status * 10 + d;
    }
    if (status < 100) throw statusLineFault(text, eol);
    if (status === 101) throw malformed('unexpected 101 Switching Protocols');
    let keepAlive = minor === 49;
    let length = -1;
    let te: string | null = null;
    const headers = marks === null ? headerLines(text, eol + 2) : headersAt(text, marks);
    for (let h = 0; h < headers.length; h += 2) {
      let name = headers[h];
      // A usual long name becomes its constant, which this loop and the exchange compare cheaply.
      if (name.length >= SHORTEST_USUAL_LONG_NAME && marks !== null) name = headers[h] = usualNameOfLine(marks, h >> 1, name);
      switch (name.length) {
        case 14:
          if (isUsualHeader(name, 'content-length', 'Content-Length')) length = contentLength(headers[h + 1], length);
          break;
        case 17:
          if (isUsualHeader(name, 'transfer-encoding', 'Transfer-Encoding')) te = te === null ? headers[h + 1] : `${te}, ${headers[h + 1]}`;
          break;
        case 10:
          if (isUsualHeader(name, 'connection', 'Connection')) {
            const v = headers[h + 1].toLowerCase();
            if (/(^|[\s,])close($|[\s,])/.test(v)) keepAlive = false;
            else if (minor === 48 && /(^|[\s,])keep-alive($|[\s,])/.test(v)) keepAlive = true;
          }
          break;
      }
    }
    if (status < 200) return; // interim response: the final one follows
    this.status = status;
    this.headers = headers;
    // A head read from its text (one that came in pieces) is checked on it.
    this.headAscii = marks !== null ? marks.ascii : isAscii(text);
    this.keepAlive = keepAlive;
    this.contentLength = -1;
    if (this.noBody || status === 204 || status === 304) {
      this.contentLength = status === 204 ? -1 : length;
      this.state = ParserState.Done;
    } else if (te !== null) {
      if (!isUsualHeader(te, 'chunked', 'Chunked')) throw unsupportedCoding(te); // `chunked` alone, in any case
      this.state = ParserState.ChunkSize;
      this.remaining = 0;
      this.sizeDigits = 0;
      // Both framings in one answer, or chunked from an HTTP/1.0 server (which cannot send it:
      // RFC 9112 §6.1, framing to treat as faulty): use chunked, but do not trust the connection again.
      if (length !== -1 || minor === 48) this.keepAlive = false;
    } else if (length >= 0) {
      this.contentLength = length;
      this.remaining = length;
      this.state = length === 0 ? ParserState.Done : ParserState.Length;
    } else {
      this.state = ParserState.UntilClose;
      this.keepAlive = false;
    }
    const done = this.state === ParserState.Done;
    this.sink.onHead(status, headers);
    if (done && this.state === ParserState.Done) this.sink.onEnd(null);
  }

  /** One byte of chunk framing: size line, extensions, CRLF after data. */
  private chunkFraming(c: number): void {
    switch (this.state) {
      case ParserState.ChunkSize: {
        const v = hexValue(c);
        if (v >= 0) {
          this.remaining = this.remaining * 16 + v;
          if (this.remaining > MAX_CHUNK_SIZE || ++this.sizeDigits > MAX_SIZE_DIGITS) throw malformed('chunk size too large');
        } else if (this.sizeDigits === 0) {
          throw malformed(`bad chunk size (byte 0x${c.toString(16)})`);
        } else if (c === CR) {
          this.state = ParserState.ChunkSizeLf;
        } else if (c === 0x3b || c === 0x20 || c === 0x09) {
          this.state = ParserState.ChunkExt;
          this.extBytes = 0;
        } else {
          throw malformed(`bad chunk size (byte 0x${c.toString(16)})`);
        }
        return;
      }
      case ParserState.ChunkExt:
        if (c === CR) this.state = ParserState.ChunkSizeLf;
        else if (c === LF || ++this.extBytes > MAX_CHUNK_EXT) throw malformed('bad chunk extension');
        return;
      case ParserState.ChunkSizeLf:
        if (c !== LF) throw malformed('chunk size line not ended by CRLF');
        if (this.remaining === 0) {
          this.state = ParserState.Trailer;
        } else {
          this.state = ParserState.ChunkData;
        }
        return;
      case ParserState.ChunkDataCr:
        if (c !== CR) throw malformed('chunk data not followed by CRLF');
        this.state = ParserState.ChunkDataLf;
        return;
      case ParserState.ChunkDataLf:
        if (c !== LF) throw malformed('chunk data not followed by CRLF');
        this.state = ParserState.ChunkSize;
        this.remaining = 0;
        this.sizeDigits = 0;
    }
  }

  /** Trailer lines after the last chunk, up to the empty line. */
  private readTrailer(data: Buffer, i: number): number {
    const lf = data.indexOf(LF, i);
    const stop = lf === -1 ? data.length : lf;
    this.trailerBytes += stop - i + 1;
    if (this.trailerBytes > this.maxHeaderSize) throw tooLarge(this.maxHeaderSize);
    this.line += data.toString('latin1', i, stop);
    if (lf === -1) return data.length;
    const line = this.line;
    this.line = '';
    if (line.charCodeAt(line.length - 1) !== CR) throw malformed('trailer line not ended by CRLF');
    if (line.length === 1) {
      this.state = ParserState.Done;
      this.sink.onEnd(this.trailers);
      return lf + 1;
    }
    const colon = line.indexOf(':');
    const name = colon === -1 ? '' : line.slice(0, colon);
    if (!isToken(name) || line.indexOf('\r') !== line.length - 1) throw malformed(`bad trailer line ${JSON.stringify(line.slice(0, 80))}`);
    (this.trailers ??= []).push(name, line.slice(colon + 1, -1).trim());
    return lf + 1;
  }
}

function contentLength(value: string, prior: number): number {
  const v = digitsOnly(value) ?? listedLength(value);
  if (prior !== -1 && prior !== v) throw malformed(`conflicting content-length values ${prior} and ${v}`);
  return v;
}

/** The usual content-length: 1 to 15 digits and nothing else, read without a regular expression; else null. */
function digitsOnly(value: string): number | null {
  const n = value.length;
  if (n === 0 || n > 15) return null;
  let v = 0;
  for (let k = 0; k < n; k++) {
    const d = value.charCodeAt(k) - 48;
    if (d < 0 || d > 9) return null;
    v = v * 10 + d;
  }
  return v;
}

/** Any other content-length: a list of the same value (`5, 5`), with the whitespace around each. */
function listedLength(value: string): number {
  let v = -1;
  for (const part of value.includes(',') ? value.split(',') : [value]) {
    const p = part.trim();
    if (!DIGITS.test(p) || p.length > 15) throw malformed(`bad content-length ${JSON.stringify(value.slice(0, 40))}`);
    const n = Number(p);
    if (v !== -1 && n !== v) throw malformed(`conflicting content-length values ${JSON.stringify(value.slice(0, 80))}`);
    v = n;
  }
  return v;
}

/**
 * Any transfer coding but a lone `chunked`: the client sends no TE header, so a server may apply
 * no other (RFC 9112 §6.1, §7.4). It cannot be decoded here, and passed on its bytes would reach
 * the client as the body: `gzip, chunked` as compressed bytes, `chunked, gzip` (chunked not last:
 * close-delimited, §6.3) with the chunk framing in them too.
 */
function unsupportedCoding(te: string): Http1Error {
  return malformed(`transfer coding ${JSON.stringify(te.slice(0, 80))} not supported (the router accepts only chunked and sends no TE header)`);
}

function tooLarge(max: number): Http1Error {
  return new Http1Error('HTTP1_HEADERS_TOO_LARGE', `malformed response from upstream: header section larger than ${max} bytes`);
}

/** A status line that is not `HTTP/1.x NNN ...`; a bare CR, LF or NUL anywhere in the head is named first. */
function statusLineFault(text: string, eol: number): Http1Error {
  if (hasBareCrLf(text)) return malformed(BARE_CR_LF);
  return badStatusLine(text, eol);
}

function badStatusLine(text: string, eol: number): Http1Error {
  return malformed(`bad status line ${JSON.stringify(text.slice(0, Math.min(eol === -1 ? 80 : eol, 80)))}`);
}
