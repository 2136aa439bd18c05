/**
 * Entries filed under a number key, in two generations that bound the memory they hold: the
 * scheme of the token count cache (src/tokens/count-cache.ts) and of the memo of tool definitions'
 * texts (src/api/json-text-memo.ts).
 *
 * New entries go into the current generation; when its entries' sizes would pass half the budget,
 * it becomes the previous one and the previous one is dropped. An entry found in the previous
 * generation is moved back into the current one (`renew`), so an entry in use stays while one
 * used once leaves after two generations.
 *
 * Entries of one key form a chain of at most `maxChain` (the caller compares them with what it
 * looks for, walking `next`); a new entry beyond that replaces the whole chain. With a chain of
 * one, a new entry replaces the one of its key.
 *
 * The caller finds entries by walking the chain `current(key)` returns, then `previous(key)`: no
 * callback per lookup, so a lookup allocates nothing. Its keys are fingerprints of what it keeps,
 * made with keyStart, keyMix and keyEnd from a secret of the process.
 */
import { randomBytes } from 'node:crypto';

/**
 * A secret of this process that every key starts from. V8 hashes a Map's number keys without a
 * seed, so keys a client could compute would let it send texts that all fall in one bucket of the
 * map and make every lookup walk them; with the secret it cannot tell which texts do.
 */
const SEED = randomBytes(4).readInt32LE(0);

/** The start of a key of something of length `n`. */
export function keyStart(n: number): number {
  return Math.imul(SEED ^ n, 0x9e3779b1);
}

/** `h` with one more number (a byte, a character code) mixed in. */
export function keyMix(h: number, x: number): number {
  return Math.imul(h ^ x, 0x01000193);
}

/** The key made of `h`: every bit of it depends on every number mixed in (the maps use its low bits). */
export function keyEnd(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  return h ^ (h >>> 13);
}

/** An entry: what it is charged against the budget, and the next entry of its key. */
export interface GenerationEntry<E> {
  readonly size: number;
  next: E | null;
}

export class TwoGenerations<E extends GenerationEntry<E>> {
  #current = new Map<number, E>();
  #previous = new Map<number, E>();
  #currentSize = 0;
  #previousSize = 0;
  readonly #generationSize: number;
  readonly #maxChain: number;

  /** `maxSize`: the sizes held at most, over both generations; `maxChain`: entries of one key at most. */
  constructor(maxSize: number, maxChain: number) {
    this.#generationSize = Math.floor(maxSize / 2);
    this.#maxChain = maxChain;
  }

  /** The first entry of `key` in the current generation (walk `next` for the others). */
  current(key: number): E | undefined {
    return this.#current.get(key);
  }

  /** The first entry of `key` in the previous generation. */
  previous(key: number): E | undefined {
    return this.#previous.get(key);
  }

  /** The sizes held now, over both generations. */
  get size(): number {
    return this.#currentSize + this.#previousSize;
  }

  /** Whether nothing was ever kept (the current generation is empty only then). */
  get empty(): boolean {
    return this.#currentSize === 0;
  }

  /** Keeps `entry` under `key` in the current generation; nothing for an entry over half the budget. */
  add(key: number, entry: E): void {
    const size = entry.size;
    if (size > this.#generationSize) return;
    if (this.#currentSize + size > this.#generationSize) {
      this.#previous = this.#current;
      this.#previousSize = this.#currentSize;
      this.#current = new Map();
      this.#currentSize = 0;
    }
    let chain = this.#current.get(key) ?? null;
    let length = 0;
    for (let e = chain; e !== null; e = e.next) length++;
    if (length >= this.#maxChain) {
      for (let e = chain; e !== null; e = e.next) this.#currentSize -= e.size;
      chain = null;
    }
    entry.next = chain;
    this.#current.set(key, entry);
    this.#currentSize += size;
  }

  /** Moves `entry`, found in the previous generation's chain of `key`, into the current one. */
  renew(key: number, entry: E): void {
    const map = this.#previous;
    let head = map.get(key)!;
    if (head === entry) {
      if (entry.next === null) map.delete(key);
      else map.set(key, entry.next);
    } else {
      while (head.next !== entry) head = head.next!;
      head.next = entry.next;
    }
    this.#previousSize -= entry.size;
    this.add(key, entry);
  }
}
