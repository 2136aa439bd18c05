/**
 * A script call's RESP bytes, written straight into one reused buffer: the keys and arguments as
 * bulk strings, numbers as their decimal digits, then the command's head (`EVALSHA`, the
 * script's SHA1, the number of keys) in front of them once their count is known. One copy of the
 * whole goes out per call, as a string when it is all ASCII: a string lives in V8's young
 * generation, where a Buffer from Node's pool adds to the memory outside the heap, which V8
 * answers with full collections (docs/internals/performance-changes.md, "The global limit's
 * script calls written as bytes"). ioredis's own path (a command defined with `scripts`) builds
 * the same bytes by stringifying, measuring and concatenating each argument, about half of what a
 * call cost the router.
 *
 * Numbers are written as String(n) would write them, so the script reads the same text as
 * before; strings as UTF-8, short ASCII ones by a loop (a native write costs more than the loop
 * for a few bytes).
 */
import { Buffer } from 'node:buffer';
import { digitsOf, putDigits, putNumber } from '../../decimal-digits.js';

const CR = 13;
const LF = 10;
const DOLLAR = 36;
const STAR = 42;
const MINUS = 45;
const ZERO = 48;

/** Strings up to this many characters are written by a loop when they are ASCII. */
const SHORT_STRING = 64;

/** Room kept in front of the arguments for the head (`*argc`, EVALSHA and its SHA1, the key count: about 80 bytes). */
const HEAD_ROOM = 128;

/** What a call's head names of its script: `$7 CRLF evalsha CRLF $40 CRLF` and the SHA1, CRLF (60 bytes). */
export interface ScriptHead {
  readonly evalshaHead: Buffer;
}

/**
 * A script call's bytes, with what the client needs besides them. A class, not an object literal:
 * V8 tracks an object literal's allocation site and, when the objects made there are alive at a
 * young-generation collection, allocates the later ones in the old generation (pretenuring),
 * where they wait for a full collection. Made once per script call as a literal, they took about
 * 10 MB more of a worker's old generation with the global limit without leases
 * (performance-changes.md).
 */
export class EncodedCall {
  constructor(
    /**
     * The whole command: `*argc`, EVALSHA, the SHA1, the key count, the keys, the arguments. A
     * string when every byte is ASCII (the usual call: key names and numbers), one character per
     * byte, which the socket writes as those bytes; else a Buffer.
     */
    readonly bytes: string | Buffer,
    /** Where the key count starts in `bytes`: what follows the SHA1 (the EVAL form keeps it, with the script's text in front). */
    readonly afterSha: number,
    /** Bulk strings in the command, EVALSHA included. */
    readonly argc: number,
    /** The keys (a Cluster sends the call to the node of the first one's slot). */
    readonly keys: readonly string[],
  ) {}
}

const NO_KEYS: readonly string[] = [];

export class ScriptArgs {
  #buf: Buffer = Buffer.allocUnsafeSlow(4096);
  #at = HEAD_ROOM;
  #count = 0;
  #keys: readonly string[] = NO_KEYS;
  /** A string argument with a byte outside ASCII was written since begin(). */
  #utf8 = false;

  /** Starts a call: no keys, no arguments. */
  begin(): this {
    this.#at = HEAD_ROOM;
    this.#count = 0;
    this.#keys = NO_KEYS;
    this.#utf8 = false;
    return this;
  }

  /** A key: keys come before every other argument. */
  key(k: string): this {
    this.#keys = this.#keys.length === 0 ? [k] : [...this.#keys, k];
    return this.str(k);
  }

  /** A string argument, as UTF-8. */
  str(s: string): this {
    const n = s.length;
    // Short ASCII text (a limit's unit, a clock reading, an incarnation, most keys) by a loop: no
    // native call. Text with a character outside ASCII is written again below, over these bytes.
    if (n <= SHORT_STRING) {
      const at = this.#lengthLine(n);
      const buf = this.#buf;
      let i = 0;
      for (; i < n; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) break;
        buf[at + i] = c;
      }
      if (i === n) {
        this.#end(at + n);
        return this;
      }
    }
    const len = Buffer.byteLength(s, 'utf8');
    if (len !== n) this.#utf8 = true;
    let at = this.#lengthLine(len);
    if (len > 0) at += this.#buf.write(s, at, len, 'utf8');
    this.#end(at);
    return this;
  }

  /** A number argument, written as String(n) writes it. */
  num(n: number): this {
    if (n >= 0 && n < 1_000_000_000 && (n | 0) === n) {
      const d = digitsOf(n);
      this.#end(putDigits(this.#buf, this.#lengthLine(d), n, d));
    } else if (n < 0 && n > -1_000_000_000 && (n | 0) === n) {
      const d = digitsOf(-n);
      const at = this.#lengthLine(d + 1);
      this.#buf[at] = MINUS;
      this.#end(putDigits(this.#buf, at + 1, -n, d));
    } else {
      this.str(String(n));
    }
    return this;
  }

  /** Each number of `list`, in order. */
  nums(list: readonly number[]): this {
    for (let i = 0; i < list.length; i++) this.num(list[i]);
    return this;
  }

  /** The call of `script` with the keys and arguments given since begin(): its bytes in a buffer of their own. */
  call(script: ScriptHead): EncodedCall {
    const keyCount = this.#keys.length;
    const argc = this.#count + 3;
    const argcDigits = digitsOf(argc);
    const countDigits = digitsOf(keyCount);
    const sha = script.evalshaHead;
    // Right before the arguments: *argc, then $7 evalsha and $40 with the SHA1, then the key count.
    const afterSha = 1 + argcDigits + 2 + sha.length;
    const start = HEAD_ROOM - afterSha - (countDigits + 6);
    const buf = this.#buf;
    buf[start] = STAR;
    let at = putNumber(buf, start + 1, argc);
    buf[at++] = CR;
    buf[at++] = LF;
    buf.set(sha, at);
    at += sha.length;
    buf[at++] = DOLLAR;
    buf[at++] = ZERO + countDigits;
    buf[at++] = CR;
    buf[at++] = LF;
    at = putNumber(buf, at, keyCount);
    buf[at++] = CR;
    buf[at++] = LF;
    return new EncodedCall(this.#utf8 ? Buffer.from(buf.subarray(start, this.#at)) : buf.toString('latin1', start, this.#at), afterSha, argc, this.#keys);
  }

  /**
   * Writes `$len CRLF` after the arguments so far, with room for the `len` bytes of an argument
   * and the CRLF after them; where those bytes go. Until #end, the argument is not part of the
   * call (str() writes a line again when its text turns out not to be ASCII).
   */
  #lengthLine(len: number): number {
    const need = this.#at + 16 + len;
    if (need > this.#buf.length) this.#grow(need);
    const buf = this.#buf;
    let at = this.#at;
    buf[at++] = DOLLAR;
    at = putNumber(buf, at, len);
    buf[at++] = CR;
    buf[at++] = LF;
    return at;
  }

  /** Ends the argument whose bytes end at `at`: one more in the call. */
  #end(at: number): void {
    this.#buf[at++] = CR;
    this.#buf[at++] = LF;
    this.#at = at;
    this.#count++;
  }

  #grow(need: number): void {
    let size = this.#buf.length * 2;
    while (size < need) size *= 2;
    const more = Buffer.allocUnsafeSlow(size);
    this.#buf.copy(more, 0, 0, this.#at);
    this.#buf = more;
  }
}
