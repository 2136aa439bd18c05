/**
 * The usual long header names, recognised in a head's bytes so that the header list the parser
 * hands over holds the program's own string constants for them instead of strings cut from the
 * head's text.
 *
 * Why: a name of 13 characters or more cut from the head's text is a sliced string (V8 slices
 * from that length on), and comparing a sliced string with another string of its length goes to
 * V8's runtime (about 340 instructions a comparison). `Content-Length` is compared three times
 * per answer (twice in the parser's framing, once in the exchange's forwarding decision). A
 * string constant is internalized, as every literal spelled the same is, so those comparisons
 * are one of pointers or of two flat strings. The names are the ones the parser and the exchange
 * compare, in the two spellings servers usually send, matched exactly (any other spelling is
 * sliced as before); the bytes are compared four at a time, after the scan checked them as
 * token characters.
 */

/** The names recognised; a name's code is its index here plus one (0: none). */
const USUAL: readonly string[] = [
  'cache-control', 'Cache-Control',
  'content-length', 'Content-Length',
  'content-encoding', 'Content-Encoding', 'proxy-connection', 'Proxy-Connection',
  'transfer-encoding', 'Transfer-Encoding',
];

/** No name of fewer characters is recognised (V8 copies such a slice, and compares copies inline). */
export const SHORTEST_USUAL_LONG_NAME = 13;

/** The most words a name of USUAL takes (usualLongName's reads: 0, 4, 8, … while a whole word fits, then the last four bytes). */
const WORDS_PER_NAME = 5;

/** Each name's bytes as little-endian 32-bit words at the offsets usualLongName reads, WORDS_PER_NAME slots a name. */
const WORDS = new Int32Array(USUAL.length * WORDS_PER_NAME);
USUAL.forEach((name, i) => {
  const bytes = new DataView(new TextEncoder().encode(name).buffer);
  let w = i * WORDS_PER_NAME;
  for (let k = 0; k + 4 < name.length; k += 4) WORDS[w++] = bytes.getInt32(k, true);
  WORDS[w] = bytes.getInt32(name.length - 4, true);
});

/** The names of each length are next to each other in USUAL: from FROM[n] up to (not with) TO[n]. */
const FROM = new Int8Array(USUAL[USUAL.length - 1].length + 1);
const TO = new Int8Array(FROM.length);
USUAL.forEach((name, i) => {
  if (TO[name.length] === 0) FROM[name.length] = i;
  TO[name.length] = i + 1;
});

/**
 * The code of the usual name whose bytes `v` holds from `at` for `length` bytes (at least
 * SHORTEST_USUAL_LONG_NAME), or 0 when they spell none of them exactly.
 */
export function usualLongName(v: DataView, at: number, length: number): number {
  if (length >= FROM.length) return 0;
  const first = v.getInt32(at, true);
  const last = v.getInt32(at + length - 4, true);
  const lastWord = (length - 1) >> 2; // the slot of the last four bytes
  for (let i = FROM[length]; i < TO[length]; i++) {
    const w = i * WORDS_PER_NAME;
    if (WORDS[w] !== first || WORDS[w + lastWord] !== last) continue;
    let k = 1;
    while (k < lastWord && v.getInt32(at + 4 * k, true) === WORDS[w + k]) k++;
    if (k === lastWord) return i + 1;
  }
  return 0;
}

/** The name of a code usualLongName returned (not 0). */
export function usualLongNameOf(code: number): string {
  return USUAL[code - 1];
}
