/**
 * Escaping of access-log values so that a record is always exactly one line and no value can
 * forge a field or a record. Rules (docs/access-log.md, "Escaping"):
 *
 * JSON: JSON.stringify escaping, plus DEL, the C1 controls U+0080–U+009F and the line/paragraph
 * separators U+2028/U+2029 as \uXXXX (JSON.stringify leaves those raw).
 *
 * Text: a value is written bare when it is non-empty, not "-", and holds no space, `"`, `\`,
 * control character (U+0000–U+001F, U+007F–U+009F) or U+2028/U+2029. Otherwise it is written
 * as a double-quoted string with `\"`, `\\`, `\t`, `\n`, `\r`, `\xHH` for other controls and
 * `\u2028`/`\u2029` — the syntax of a Go quoted string. The empty value is written `-`.
 * Inside the quoted request line the same escapes apply, and a space is written `\x20`, so the
 * request line always splits into exactly three parts.
 */

const HEX = '0123456789abcdef';

function hex2(code: number): string {
  return HEX[code >> 4] + HEX[code & 15];
}

// ---- JSON ----

/** Characters JSON.stringify leaves raw that we still escape. */
const JSON_EXTRA = /[\u007f-\u009f\u2028\u2029]/g;
/** Strings made only of these need no escaping at all: printable ASCII without `"` and `\`. */
const JSON_PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

function jsonExtra(ch: string): string {
  const code = ch.charCodeAt(0);
  return '\\u' + hex2(code >> 8) + hex2(code & 255);
}

/** A JSON string literal (with quotes) for `s`. */
export function jsonString(s: string): string {
  if (JSON_PLAIN.test(s)) return '"' + s + '"';
  return JSON.stringify(s).replace(JSON_EXTRA, jsonExtra);
}

// ---- text ----

/** Any of these forces a value into quotes. */
const TEXT_NEEDS_QUOTES = /[\x00-\x20"\\\x7f-\x9f\u2028\u2029]/;
/** Characters escaped inside a quoted value (space stays raw there). */
const TEXT_QUOTED_ESC = /[\x00-\x1f"\\\x7f-\x9f\u2028\u2029]/g;
/** Characters escaped inside the quoted request line (space too). */
const TEXT_REQLINE_ESC = /[\x00-\x20"\\\x7f-\x9f\u2028\u2029]/g;

function textEscape(ch: string): string {
  switch (ch) {
    case '"': return '\\"';
    case '\\': return '\\\\';
    case '\n': return '\\n';
    case '\r': return '\\r';
    case '\t': return '\\t';
    case '\u2028': return '\\u2028';
    case '\u2029': return '\\u2029';
    default: return '\\x' + hex2(ch.charCodeAt(0));
  }
}

/** A text-format value: bare, quoted, or `-` when empty. */
export function textValue(s: string): string {
  if (s.length === 0) return '-';
  if (s === '-' || TEXT_NEEDS_QUOTES.test(s)) return '"' + s.replace(TEXT_QUOTED_ESC, textEscape) + '"';
  return s;
}

/** One part (method, path, protocol) of the quoted request line; `-` when empty. */
export function textRequestLinePart(s: string): string {
  if (s.length === 0) return '-';
  if (s === '-') return '\\x2d';
  return TEXT_NEEDS_QUOTES.test(s) ? s.replace(TEXT_REQLINE_ESC, textEscape) : s;
}
