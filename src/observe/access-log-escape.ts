/**
 * Escaping of access-log values so that a record is always exactly one line and no value can
 * forge a field or a record. Rules (docs/access-log.md, "Escaping"):
 *
 * JSON: JSON.stringify escaping, plus DEL, the C1 controls U+0080–U+009F and the line/paragraph
 * separators U+2028/U+2029 as \uXXXX (JSON.stringify leaves those raw).
 *
 * Text: every value is written as one space-free token. A space, `"`, `\`, the control characters
 * U+0000–U+001F and U+007F–U+009F are written `\xHH` (two lowercase hex digits), U+2028/U+2029
 * `\u2028`/`\u2029`; all other characters, including non-ASCII, are written as they are (UTF-8).
 * The empty value is written `-`, a value that is exactly "-" is written `\x2d`. So a line splits
 * on spaces into exactly its fields, and decoding is: `\xHH` and `\uHHHH` to their characters.
 */
import { isAscii } from '../ascii-text.js';

const HEX = '0123456789abcdef';

function hex2(code: number): string {
  return HEX[code >> 4] + HEX[code & 15];
}

// ---- JSON ----

/** Characters JSON.stringify leaves raw that we still escape. */
const JSON_EXTRA = /[\u007f-\u009f\u2028\u2029]/g;

/**
 * Whether `s` needs no JSON escaping at all: printable ASCII without `"` and `\`, so its string
 * literal is itself in quotes, one byte a character.
 */
export function isJsonPlain(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return false;
  }
  return true;
}

function jsonExtra(ch: string): string {
  const code = ch.charCodeAt(0);
  return '\\u' + hex2(code >> 8) + hex2(code & 255);
}

/** A JSON string literal (with quotes) for `s`. */
export function jsonString(s: string): string {
  if (isJsonPlain(s)) return '"' + s + '"';
  return escapeJsonExtras(JSON.stringify(s));
}

/** JSON text (JSON.stringify's) with the characters it leaves raw escaped too: DEL, the C1 controls, U+2028/U+2029. */
export function escapeJsonExtras(json: string): string {
  return json.replace(JSON_EXTRA, jsonExtra);
}

// ---- text ----

/** Characters written as an escape in text values: space, `"`, `\`, controls, U+2028/U+2029. */
const TEXT_ESC = /[\x00-\x20"\\\x7f-\x9f\u2028\u2029]/;
const TEXT_ESC_ALL = /[\x00-\x20"\\\x7f-\x9f\u2028\u2029]/g;

/** A character as a text value writes it: `\xHH` (one byte), else `\uHHHH` (also the operational log's text lines). */
export function textEscape(ch: string): string {
  const code = ch.charCodeAt(0);
  return code < 0x100 ? '\\x' + hex2(code) : '\\u' + hex2(code >> 8) + hex2(code & 255);
}

/** A text-format value: `-` when empty, `\x2d` for a literal "-", escapes as above otherwise. */
export function textValue(s: string): string {
  if (s.length === 0) return '-';
  if (s === '-') return '\\x2d';
  return TEXT_ESC.test(s) ? s.replace(TEXT_ESC_ALL, textEscape) : s;
}

/**
 * Whether `s` is its own text value and all ASCII: printable ASCII without space, `"` and `\`,
 * not empty and not "-" (textValue(s) === s, one byte a character).
 */
export function isTextPlainAscii(s: string): boolean {
  if (s.length === 0 || s === '-') return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c <= 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return false;
  }
  return true;
}

/** The error type in `error=<type>:<message>`: a text value with `:` also escaped (`\x3a`). */
export function textErrorType(s: string): string {
  const v = textValue(s);
  return v.includes(':') ? v.replace(/:/g, '\\x3a') : v;
}

/**
 * An escaper with a one-entry memory, for a field whose value mostly repeats from record to
 * record (method, path, protocol, model, route, server, pod): an equal value costs one string
 * comparison instead of a scan. One instance per field. `ascii` tells whether the last output is
 * all ASCII (checked once per new value).
 */
export class LastEscaped {
  private last = '';
  private out: string;
  ascii: boolean;

  constructor(private readonly escape: (s: string) => string) {
    this.out = escape('');
    this.ascii = isAscii(this.out);
  }

  of(s: string): string {
    if (s === this.last) return this.out;
    const out = this.escape(s);
    this.last = s;
    this.out = out;
    this.ascii = isAscii(out);
    return out;
  }
}
