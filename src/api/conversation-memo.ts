/**
 * Long conversations parsed once per process (docs/tokens.md#long-conversations). A chat client
 * sends the whole conversation with every turn: the messages of the turn before, byte for byte,
 * then the answer and the new question. Parsing and counting those 30 KB again each turn was most
 * of the router's own work on them. The memo keeps, per conversation, its bytes up to the end of
 * its last message and the values JSON.parse made of them; a body that starts with those bytes
 * (compared whole) and goes on with more messages is parsed from there on only, and takes the
 * kept messages (the same objects, so their texts are the same strings: counted from the cache of
 * repeated texts without reading them again).
 *
 * It is found from the body's end: each `}` followed by `,` or `]` (a message's end, or a string's
 * bytes that look like one) is tried, the last first, by a key of its position and the 64 bytes
 * before it; a kept conversation of that key is taken only when all its bytes equal the body's.
 * What follows them is checked as JSON.parse would (the new messages and the members after them
 * are parsed), so a body it takes is one JSON.parse accepts, with the same values.
 */
import { Buffer } from 'node:buffer';
import type { KeptPrompt } from '../tokens/prompt-text.js';
import { keyEnd, keyMix, keyStart, TwoGenerations } from '../two-generations.js';
import { isJsonSpace, skipSpace } from './flat-json-counts.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from './json-depth.js';
import { escapedKeyName, firstMember, KEY_END, member, NEXT, readMember, VALUE_END, valueEnd } from './json-members.js';

/**
 * Memory the memo holds at most by default (ROUTER_TOKENIZER_CONVERSATION_BYTES), per event loop
 * and per tokenizer thread, over its two generations; each conversation is charged three times its bytes.
 */
export const CONVERSATION_MEMO_BYTES = 24 * 1024 * 1024;
/** Smaller bodies are parsed whole: the memo would save little. */
export const MIN_CONVERSATION_BYTES = 8 * 1024;
/** A body kept must have at least this many messages (a conversation with an answer in it). */
const MIN_MESSAGES = 3;
/** The bytes before a message's end that, with its position, key a conversation. */
const KEY_BYTES = 64;
/** Message ends tried, from the body's end, before the body is parsed whole. */
const MAX_TRIES = 32;
/** Conversations of one key kept at most. */
const MAX_CHAIN = 4;
/** What a conversation is charged: its bytes, and the values parsed from them (about twice as much). */
const SIZE_PER_BYTE = 3;
/**
 * New conversations stop being kept after this many in a row were not found again (a client
 * whose conversations do not go on); then one body in LEARN_EVERY is still kept.
 */
const LEARN_MISSES = 16;
const LEARN_EVERY = 64;

/** A conversation's bytes end inside the body's object and its messages' array. */
const DEPTH_AT_CUT = 2;

const CLOSE_BRACE = 0x7d;
const OPEN_BRACE = 0x7b;
const COMMA = 0x2c;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const OPEN = Buffer.from('{');
const EMPTY: readonly unknown[] = [];

interface Conversation {
  /** The body's bytes up to the end of its last message. */
  readonly bytes: Buffer;
  /** The body's members before `messages`, by name, and their values. */
  readonly head: readonly string[];
  readonly headValues: readonly unknown[];
  readonly messages: readonly unknown[];
  /** Its count, once known (the token counter keeps it: tokens/prompt-text.ts). */
  readonly prompt: KeptPrompt;
  readonly size: number;
  next: Conversation | null;
}

/** Parses the members after the messages (`{` and the rest of the body): the tools' text comes with them when read by their bytes. */
export type TailParser = (tail: Buffer) => unknown;

export class ConversationMemo {
  /** Bodies taken from a kept conversation, and conversations kept (each turn's, longer each time). */
  readonly stats = { found: 0, kept: 0 };
  /** The count of the kept conversation the last body parse() gave went on from (its messages first), else null. */
  found: KeptPrompt | null = null;
  #kept!: TwoGenerations<Conversation>;
  /** Bodies longer than this are not kept: a conversation of them would be charged more than a generation holds. */
  #maxKeptBytes = 0;
  #notFoundInARow = 0;
  #skipped = 0;

  /** `maxBytes`: memory held at most, over both generations; 0 = none (nothing is kept). */
  constructor(maxBytes: number) {
    this.setMaxBytes(maxBytes);
  }

  /** Lets go of every conversation kept, and holds at most `maxBytes` from here on (0 = none). */
  setMaxBytes(maxBytes: number): void {
    this.#kept = new TwoGenerations<Conversation>(maxBytes, MAX_CHAIN);
    this.#maxKeptBytes = Math.floor(maxBytes / 2 / SIZE_PER_BYTE);
    this.#notFoundInARow = 0;
    this.#skipped = 0;
  }

  /**
   * The JSON object of `raw` (its JSON from `from`) when it goes on from a kept conversation;
   * null when none is found or what follows is not what JSON.parse accepts or nests deeper than
   * MAX_JSON_DEPTH: parse it whole (and call learn). Throws nothing but what `parseTail` throws.
   */
  parse(raw: Buffer, from: number, parseTail: TailParser): Record<string, unknown> | null {
    this.found = null;
    if (raw.length < MIN_CONVERSATION_BYTES || this.#kept.empty) return null;
    let end = raw.length - 1;
    while (end > from && isJsonSpace(raw[end])) end--;
    if (raw[end] !== CLOSE_BRACE) return null;
    let at = end;
    for (let tries = 0; tries < MAX_TRIES; tries++) {
      const brace = raw.lastIndexOf(CLOSE_BRACE, at - 1);
      const cut = brace + 1;
      if (cut - from < KEY_BYTES) return null;
      at = brace;
      const after = skipSpace(raw, cut);
      const sep = raw[after];
      if (sep === COMMA) {
        if (raw[skipSpace(raw, after + 1)] !== OPEN_BRACE) continue;
      } else if (sep !== CLOSE_BRACKET) continue;
      const kept = this.#find(raw, cut);
      if (kept === null) continue;
      this.#notFoundInARow = 0;
      const body = this.#goOn(raw, kept, after, end, parseTail);
      if (body !== null) this.stats.found++;
      return body;
    }
    return null;
  }

  /** Keeps the conversation of `body`, parsed whole from `raw` (its JSON from `from`), if it is one worth keeping. */
  learn(raw: Buffer, from: number, body: unknown): void {
    if (raw.length < MIN_CONVERSATION_BYTES || raw.length > this.#maxKeptBytes) return;
    if (body === null || typeof body !== 'object' || Array.isArray(body)) return;
    const messages = (body as Record<string, unknown>).messages;
    if (!Array.isArray(messages) || messages.length < MIN_MESSAGES) return;
    if (this.#notFoundInARow >= LEARN_MISSES && ++this.#skipped % LEARN_EVERY !== 0) return;
    this.#notFoundInARow++;
    const head: string[] = [];
    const names: string[] = [];
    let cut = -1;
    for (let i = firstMember(raw); raw[i] !== CLOSE_BRACE; i = member[NEXT]) {
      readMember(raw, i);
      const keyEnd = member[KEY_END];
      if (escapedKeyName(raw, i, keyEnd) !== null) return;
      const name = raw.toString('utf8', i + 1, keyEnd - 1);
      // A name given twice: the body's values are its last one's, which the kept bytes may not hold.
      if (name === '__proto__' || names.includes(name)) return;
      names.push(name);
      if (name === 'messages') {
        let last = member[VALUE_END] - 2;
        while (isJsonSpace(raw[last])) last--;
        if (raw[last] !== CLOSE_BRACE) return;
        cut = last + 1;
      } else if (cut < 0) {
        head.push(name);
      }
    }
    if (cut - from < KEY_BYTES) return;
    const values = head.map((name) => (body as Record<string, unknown>)[name]);
    this.#keep(raw, cut, head, values, messages, null);
  }

  /** The kept conversation whose bytes are raw[0, cut), if any. */
  #find(raw: Buffer, cut: number): Conversation | null {
    const key = cutKey(raw, cut);
    for (let c: Conversation | null | undefined = this.#kept.current(key); c !== undefined && c !== null; c = c.next) {
      if (endsAt(c, raw, cut)) return c;
    }
    for (let c: Conversation | null | undefined = this.#kept.previous(key); c !== undefined && c !== null; c = c.next) {
      if (endsAt(c, raw, cut)) {
        this.#kept.renew(key, c);
        return c;
      }
    }
    return null;
  }

  /**
   * The body of `raw`, which holds `kept`'s bytes and then, at `after`, a comma and more messages
   * or the messages' closing bracket: the new messages and the members after them are parsed.
   * Null when they are not what JSON.parse accepts (the body is then parsed whole, and JSON.parse
   * names what is wrong). The body's longer conversation is kept.
   */
  #goOn(raw: Buffer, kept: Conversation, after: number, end: number, parseTail: TailParser): Record<string, unknown> | null {
    // The kept bytes nested no deeper than the limit, and end inside the object and its messages.
    if (nestsDeeperThan(raw, MAX_JSON_DEPTH, kept.bytes.length, DEPTH_AT_CUT)) return null;
    let added: readonly unknown[] = EMPTY;
    let bracket = after;
    let lastEnd = kept.bytes.length;
    if (raw[after] === COMMA) {
      let i = skipSpace(raw, after + 1);
      for (;;) {
        // Messages are objects; anything else is left to the whole parse.
        const objectEnd = raw[i] === OPEN_BRACE ? valueEnd(raw, i, end) : -1;
        if (objectEnd < 0) return null;
        lastEnd = objectEnd;
        i = skipSpace(raw, objectEnd);
        if (raw[i] === CLOSE_BRACKET) break;
        if (raw[i] !== COMMA) return null;
        i = skipSpace(raw, i + 1);
      }
      bracket = i;
      try {
        added = JSON.parse(`[${raw.toString('utf8', after + 1, bracket)}]`) as unknown[];
      } catch {
        return null;
      }
    }
    let tail: Record<string, unknown> | null = null;
    const k = skipSpace(raw, bracket + 1);
    if (raw[k] === COMMA) {
      const j = skipSpace(raw, k + 1);
      if (raw[j] !== QUOTE) return null;
      let parsed: unknown;
      try {
        parsed = parseTail(Buffer.concat([OPEN, raw.subarray(j)]));
      } catch {
        return null;
      }
      tail = parsed as Record<string, unknown>;
      // JSON.parse makes `__proto__` an own member, which an assignment would not.
      if (Object.hasOwn(tail, '__proto__')) return null;
    } else if (k !== end) {
      return null;
    }
    const messages = added.length === 0 ? kept.messages.slice() : kept.messages.concat(added);
    const body: Record<string, unknown> = {};
    for (let h = 0; h < kept.head.length; h++) body[kept.head[h]] = kept.headValues[h];
    body.messages = messages;
    if (tail !== null) {
      // A member named again after the messages: its last value, where it first came, as JSON.parse does.
      const names = Object.keys(tail);
      for (let n = 0; n < names.length; n++) body[names[n]] = tail[names[n]];
      if (Object.hasOwn(tail, 'messages')) return body;
    }
    this.found = kept.prompt;
    if (added.length > 0) {
      // Counts are read one base back at most (openai-prompt.ts): older ones are let go.
      const base = kept.prompt.base;
      if (base !== null) base.base = null;
      this.#keep(raw, lastEnd, kept.head, kept.headValues, messages.slice(), kept.prompt);
    }
    return body;
  }

  #keep(raw: Buffer, cut: number, head: readonly string[], headValues: readonly unknown[], messages: readonly unknown[], base: KeptPrompt | null): void {
    if (cut > this.#maxKeptBytes) return;
    this.stats.kept++;
    const bytes = Buffer.allocUnsafeSlow(cut);
    raw.copy(bytes, 0, 0, cut);
    const prompt: KeptPrompt = { tokens: -1, known: 0, counted: 0, messages: messages.length, base };
    this.#kept.add(cutKey(raw, cut), { bytes, head, headValues, messages, prompt, size: cut * SIZE_PER_BYTE, next: null });
  }
}

/** The key of a conversation whose bytes end at `cut`: its length and its last KEY_BYTES bytes. */
function cutKey(raw: Buffer, cut: number): number {
  let h = keyStart(cut);
  for (let i = cut - KEY_BYTES; i < cut; i += 4) h = keyMix(h, raw.readInt32LE(i));
  return keyEnd(h);
}

/** Whether `c`'s bytes are raw[0, cut), all of them compared. */
function endsAt(c: Conversation, raw: Buffer, cut: number): boolean {
  return c.bytes.length === cut && raw.compare(c.bytes, 0, cut, 0, cut) === 0;
}
