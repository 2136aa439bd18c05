/**
 * The top-level members of one name cut out of the JSON data of an event that is forwarded as it
 * comes, in pieces, because it is too large to hold (sse-strip.ts). The JSON left is the one
 * json-member-cut.ts leaves of a whole event, but a member after a kept one goes with the comma
 * before it (and the white space after that comma), since whether another member
 * follows it is not known when it must go; a member before any kept one goes with the comma after
 * it (and the white space up to the next member), or alone. Only the bytes that may yet be cut are
 * held: a comma, the white space after it and the next key, at most HOLD_BYTES. When more than
 * that comes between the comma and the end of the key, what came after the comma goes on and the
 * comma alone waits: it goes out just before the key when the member is kept (so it stands after
 * the white space instead of before it: the same JSON), and is dropped with the member when it is
 * cut. (An event whose JSON ends after such a comma, which is not a JSON object, loses the comma.)
 * A key longer than HOLD_BYTES is not the one cut: it goes on as it came. The cut member's value is
 * dropped as it comes; its top level is kept for the caller to read (`value`).
 *
 * The event's framing is read too: its `data:` prefixes, line ends and other lines are never cut;
 * the data lines' values are the JSON (a line end between them is white space to it). Text that
 * is not a JSON object goes on as it came from where it stops being one.
 */
import { keyIs } from './json-member-cut.js';
import { isJsonSpace } from './flat-json-counts.js';
import { Buffer } from 'node:buffer';

/** Most bytes held while a key is read. */
export const HOLD_BYTES = 4096;
/** Most bytes of a cut value's top level (see `value`) kept for the caller. */
export const VALUE_BYTES = 64 * 1024;

const LF = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const DATA = [0x64, 0x61, 0x74, 0x61];

// Where a line is: its field name (`nameAt` bytes of "data" read), after `data:`, in a data value, in another line.
const LINE_NAME = 0;
const LINE_SPACE = 1;
const LINE_VALUE = 2;
const LINE_OTHER = 3;

// Where the JSON is, at its top level.
const J_START = 0;
const J_FIRST_KEY = 1; // after `{`
const J_KEY = 2;
const J_COLON = 3;
const J_VALUE_START = 4;
const J_VALUE = 5;
const J_AFTER_VALUE = 6;
const J_NEXT_KEY = 7; // after `,`
const J_DONE = 8;
const J_NOT_OBJECT = 9;

// What becomes of a byte.
const PASS = 0;
const DROP = 1;
const DROP_VALUE = 2; // dropped, and kept for the caller
const HOLD_JSON = 3;
const HOLD_FRAME = 4;
const NO_RUN = -1;

const EMPTY = Buffer.alloc(0);

export class SseMemberStreamCut {
  /**
   * The top level of the value of the last member cut, as JSON text: its numbers, literals and keys
   * as they came, its strings emptied (`""`), its nested objects and arrays emptied (`{}`, `[]`),
   * without white space; enough to read a usage object's counts, whatever the value's size. Null:
   * none, more than VALUE_BYTES of that (not a usage object), or white space between two bytes of
   * numbers or literals at its top level (`4 2`, `tr ue`: malformed JSON, which taking the white
   * space out would have joined into a count).
   */
  value: Buffer | null = null;

  private readonly key: Buffer;
  private line = LINE_NAME;
  /** Bytes of "data" read at the start of the line. */
  private nameAt = 0;
  private json = J_START;
  /** Inside the current value: nesting depth, in a string, after a backslash, a number or literal. */
  private depth = 0;
  private inString = false;
  private escaped = false;
  private scalar = false;
  /** In the value cut: its top is an object, a `:` came at its top level (a string there is a value), the string is a key. */
  private valueIsObject = false;
  private afterColon = false;
  private stringIsKey = false;
  /** At the value's top level: the last byte kept was of a number or literal; white space came after it; a scalar byte came after that. */
  private lastTopScalar = false;
  private spaceAfterScalar = false;
  private valueJoined = false;
  /** A member was kept: a later cut takes the comma before its member. */
  private kept = false;
  /** The current member is being cut (and, when nothing was kept, the comma after it). */
  private cutting = false;
  /** Bytes that may yet be cut (a comma, white space, a key; lines between), and which are JSON. */
  private holding = false;
  private readonly held = Buffer.allocUnsafe(HOLD_BYTES);
  private readonly heldJson = new Uint8Array(HOLD_BYTES);
  private heldLength = 0;
  /** Where the key being read starts in `held` (after its quote); -1: none, or given up. */
  private keyFrom = -1;
  /** The key just ended: decide whether its member is cut. */
  private keyEnded = false;
  /** `held` starts with the comma after a kept member. */
  private commaHeld = false;
  /** That comma waits alone (what came after it went on): out before the next key if its member is kept. */
  private commaPending = false;
  private valueParts: Buffer[] = [];
  private valueLength = 0;
  private valueTooLong = false;
  /** The current run of bytes of one fate in the bytes pushed. */
  private runStart = 0;
  private runFate = NO_RUN;
  /** The bytes being pushed and where in them. */
  private bytes: Buffer = EMPTY;
  private at = 0;

  constructor(key: Buffer) {
    this.key = key;
  }

  /** Bytes of the event, in order, from its first; what to forward goes to `out`. */
  push(bytes: Buffer, out: Buffer[]): void {
    this.runStart = 0;
    this.runFate = NO_RUN;
    this.bytes = bytes;
    for (let i = 0; i < bytes.length; i++) {
      const c = bytes[i];
      this.at = i;
      const fate = this.line === LINE_VALUE && c !== CR && c !== LF ? this.jsonByte(c, out) : this.frameByte(c, out);
      if (fate !== this.runFate) {
        this.flushRun(bytes, i, out);
        this.runFate = fate;
        this.runStart = i;
      }
      if (fate === HOLD_JSON || fate === HOLD_FRAME) this.hold(c, fate === HOLD_JSON, out);
      if (this.keyEnded) {
        this.keyEnded = false;
        this.decide(out);
      }
    }
    this.flushRun(bytes, bytes.length, out);
    this.bytes = EMPTY;
  }

  /** The event ended: what is still held goes out as it came. */
  end(out: Buffer[]): void {
    if (this.holding) this.release(out);
    this.takeValue();
  }

  private flushRun(bytes: Buffer, to: number, out: Buffer[]): void {
    const from = this.runStart;
    if (to <= from) return;
    if (this.runFate === PASS) out.push(bytes.subarray(from, to));
    else if (this.runFate === DROP_VALUE) this.keepValueBytes(bytes.subarray(from, to));
  }

  /** A byte outside the data values: a field name, `data:` and its space, another line, a line end. */
  private frameByte(c: number, out: Buffer[]): number {
    if (c === CR || c === LF) {
      this.line = LINE_NAME;
      this.nameAt = 0;
      if (this.json === J_KEY) return this.notObject(out); // a key cannot span lines
      if (this.json === J_VALUE && this.scalar) this.valueEnd(); // white space after a number or literal
      return this.holding ? HOLD_FRAME : PASS;
    }
    if (this.line === LINE_NAME) {
      if (this.nameAt === 4) this.line = c === COLON ? LINE_SPACE : LINE_OTHER;
      else if (c === DATA[this.nameAt]) this.nameAt++;
      else this.line = LINE_OTHER;
    } else if (this.line === LINE_SPACE) {
      this.line = LINE_VALUE;
      if (c !== SPACE) return this.jsonByte(c, out);
    }
    return this.holding ? HOLD_FRAME : PASS;
  }

  /** The fate of a JSON byte outside a key and a value. */
  private fate(): number {
    return this.holding ? HOLD_JSON : this.cutting ? DROP : PASS;
  }

  /** One byte of the data's JSON. */
  private jsonByte(c: number, out: Buffer[]): number {
    switch (this.json) {
      case J_START:
        if (!isJsonSpace(c)) this.json = c === OPEN_BRACE ? J_FIRST_KEY : J_NOT_OBJECT;
        return PASS;
      case J_FIRST_KEY:
      case J_NEXT_KEY:
        if (isJsonSpace(c)) return this.fate();
        if (c === CLOSE_BRACE && this.json === J_FIRST_KEY) {
          this.json = J_DONE;
          return PASS;
        }
        if (c !== QUOTE) return this.notObject(out);
        this.json = J_KEY;
        this.escaped = false;
        this.cutting = false; // the white space after a cut first member's comma ends here
        this.holding = true;
        this.keyFrom = this.heldLength + 1;
        return HOLD_JSON;
      case J_KEY:
        if (this.escaped) this.escaped = false;
        else if (c === BACKSLASH) this.escaped = true;
        else if (c === QUOTE) {
          this.json = J_COLON;
          this.keyEnded = this.holding && this.keyFrom >= 0;
        }
        return this.fate();
      case J_COLON:
        if (isJsonSpace(c)) return this.fate();
        if (c !== COLON) return this.notObject(out);
        this.json = J_VALUE_START;
        return this.fate();
      case J_VALUE_START:
        if (isJsonSpace(c)) return this.fate();
        if (c === COMMA || c === CLOSE_BRACE || c === CLOSE_BRACKET || c === COLON) return this.notObject(out);
        this.json = J_VALUE;
        this.depth = c === OPEN_BRACE || c === OPEN_BRACKET ? 1 : 0;
        this.inString = c === QUOTE;
        this.escaped = false;
        this.scalar = this.depth === 0 && !this.inString;
        if (!this.cutting) return PASS;
        this.startValue();
        this.valueIsObject = c === OPEN_BRACE;
        this.afterColon = false;
        return DROP_VALUE;
      case J_VALUE:
        return this.valueByte(c, out);
      case J_AFTER_VALUE:
        return this.afterValue(c, out);
      default: // J_DONE, J_NOT_OBJECT
        return PASS;
    }
  }

  /** A byte after the first of a value. */
  private valueByte(c: number, out: Buffer[]): number {
    if (this.scalar) {
      if (!isJsonSpace(c) && c !== COMMA && c !== CLOSE_BRACE && c !== CLOSE_BRACKET) return this.cutting ? DROP_VALUE : PASS;
      this.valueEnd();
      return this.afterValue(c, out);
    }
    const cutting = this.cutting; // valueEnd may end the cut: this byte is still the value's
    const depth = this.depth; // before this byte
    let top = depth === 1; // a byte of the value's top level, kept when cut
    if (this.inString) {
      top = depth === 1 && this.stringIsKey;
      if (this.escaped) this.escaped = false;
      else if (c === BACKSLASH) this.escaped = true;
      else if (c === QUOTE) {
        this.inString = false;
        top = depth <= 1; // an emptied string keeps its quotes
        if (depth === 0) this.valueEnd();
      }
    } else if (c === QUOTE) {
      this.inString = true;
      this.stringIsKey = this.valueIsObject && !this.afterColon;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      this.depth++;
      top = depth === 1; // an emptied object or array keeps its brackets
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      top = depth === 2 || depth === 1;
      if (--this.depth === 0) this.valueEnd();
    } else if (top) {
      if (c === COLON) this.afterColon = true;
      else if (c === COMMA) this.afterColon = false;
      else if (isJsonSpace(c)) {
        if (this.lastTopScalar) this.spaceAfterScalar = true;
        return !cutting ? PASS : DROP;
      } else {
        if (this.spaceAfterScalar) this.valueJoined = true; // `4 2`: not to be read as 42
        this.lastTopScalar = true;
        this.spaceAfterScalar = false;
        return !cutting ? PASS : DROP_VALUE;
      }
    }
    if (top) {
      this.lastTopScalar = false;
      this.spaceAfterScalar = false;
    }
    return !cutting ? PASS : top ? DROP_VALUE : DROP;
  }

  /** The value ended (its last byte is cut or passed with it). */
  private valueEnd(): void {
    this.json = J_AFTER_VALUE;
    if (!this.cutting) this.kept = true;
    else if (this.kept) this.cutting = false; // the comma before it went with it
    else this.holding = true; // a first member cut: the white space after it goes with its comma, if one comes
  }

  /** After a value: white space, then `,` or `}`. */
  private afterValue(c: number, out: Buffer[]): number {
    if (isJsonSpace(c)) return this.fate();
    if (c === CLOSE_BRACE) {
      if (this.holding) this.release(out); // white space after a cut last member stays
      this.cutting = false;
      this.json = J_DONE;
      return PASS;
    }
    if (c !== COMMA) return this.notObject(out);
    this.json = J_NEXT_KEY;
    if (this.cutting) { // a first member cut: its comma, and the white space around it, go
      this.dropHeldJson(out);
      return DROP;
    }
    this.holding = true; // the comma goes if the next member is cut
    this.commaHeld = true;
    this.keyFrom = -1;
    return HOLD_JSON;
  }

  /** Not a JSON object this reads (from here): the rest goes on as it comes. */
  private notObject(out: Buffer[]): number {
    if (this.commaPending && !this.holding) {
      // The bytes since the comma went on in runs: the ones before this byte first, then the comma.
      this.flushRun(this.bytes, this.at, out);
      this.runFate = NO_RUN;
    }
    if (this.holding || this.commaPending) this.release(out);
    this.cutting = false;
    this.json = J_NOT_OBJECT;
    return PASS;
  }

  private hold(c: number, isJson: boolean, out: Buffer[]): void {
    if (this.heldLength === HOLD_BYTES) {
      // Too much to hold: after a comma, the comma alone waits; else (a key this long is not the
      // one cut, or white space after a cut first member) what was held goes on as it came.
      if (this.commaHeld) this.pendComma(out);
      if (this.heldLength === HOLD_BYTES) {
        this.release(out);
        this.keyFrom = -1;
      }
      if (!this.holding) {
        out.push(Buffer.from([c]));
        return;
      }
    }
    this.heldJson[this.heldLength] = isJson ? 1 : 0;
    this.held[this.heldLength++] = c;
  }

  /** The held comma waits alone: what was held after it up to the key goes out; the key, if begun, stays held. */
  private pendComma(out: Buffer[]): void {
    const keyQuote = this.keyFrom < 0 ? this.heldLength : this.keyFrom - 1;
    if (keyQuote > 1) out.push(Buffer.from(this.held.subarray(1, keyQuote)));
    this.held.copyWithin(0, keyQuote, this.heldLength);
    this.heldJson.copyWithin(0, keyQuote, this.heldLength);
    this.heldLength -= keyQuote;
    if (this.keyFrom >= 0) this.keyFrom -= keyQuote;
    else this.holding = false;
    this.commaHeld = false;
    this.commaPending = true;
  }

  /** A key was read while holding: its member is cut when it is `key`, else what was held goes out. */
  private decide(out: Buffer[]): void {
    const from = this.keyFrom;
    this.keyFrom = -1;
    if (!keyIs(this.held, from, this.heldLength - 1, this.key)) {
      this.release(out);
      return;
    }
    this.commaPending = false; // it goes with the member
    this.dropHeldJson(out);
    this.cutting = true;
  }

  /** What was held goes out as it came (after the comma that waits alone, if any). */
  private release(out: Buffer[]): void {
    if (this.commaPending) out.push(Buffer.from([COMMA]));
    if (this.heldLength !== 0) out.push(Buffer.from(this.held.subarray(0, this.heldLength)));
    this.heldLength = 0;
    this.holding = false;
    this.commaHeld = false;
    this.commaPending = false;
  }

  /** Of what was held, the JSON bytes go; the lines' framing goes out. */
  private dropHeldJson(out: Buffer[]): void {
    let from = -1;
    for (let i = 0; i < this.heldLength; i++) {
      if (this.heldJson[i] === 0) {
        if (from < 0) from = i;
      } else if (from >= 0) {
        out.push(Buffer.from(this.held.subarray(from, i)));
        from = -1;
      }
    }
    if (from >= 0) out.push(Buffer.from(this.held.subarray(from, this.heldLength)));
    this.heldLength = 0;
    this.holding = false;
    this.commaHeld = false;
  }

  private startValue(): void {
    this.takeValue();
    this.valueTooLong = false;
    this.valueJoined = false;
    this.lastTopScalar = false;
    this.spaceAfterScalar = false;
  }

  private keepValueBytes(bytes: Buffer): void {
    if (this.valueTooLong) return;
    if (this.valueLength + bytes.length > VALUE_BYTES) {
      this.valueTooLong = true;
      this.valueParts = [];
      this.valueLength = 0;
      return;
    }
    this.valueParts.push(Buffer.from(bytes));
    this.valueLength += bytes.length;
  }

  /** The bytes of the last value cut, when there are any, become `value`. */
  private takeValue(): void {
    if (this.valueLength === 0 && !this.valueTooLong) return;
    this.value = this.valueTooLong || this.valueJoined ? null : Buffer.concat(this.valueParts, this.valueLength);
    this.valueParts = [];
    this.valueLength = 0;
    this.valueTooLong = false;
    this.valueJoined = false;
  }
}
