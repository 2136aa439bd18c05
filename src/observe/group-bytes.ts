import { Buffer } from 'node:buffer';

/**
 * Bytes made once for a group of values that repeat from request to request, for the writers
 * that put a record or a span straight into a byte buffer (access-log-line-bytes.ts,
 * span-bytes.ts): the text around the values with its escaping done, encoded as UTF-8.
 */

/** `s` as UTF-8 bytes, made once (a module's constant text). */
export function utf8Bytes(s: string): Uint8Array {
  return new Uint8Array(Buffer.from(s, 'utf8'));
}

/** One group's bytes, under its first value. */
interface GroupEntry {
  readonly b: string;
  readonly c: string;
  readonly out: Uint8Array;
}

/**
 * The bytes of one group of fields for each group of values seen: found by the first value (a
 * Map), then among the few groups that share it. The first value is the one that varies most (the
 * path of the request's group, the model of the target's, the pod), so a deployment of many pods
 * or models finds each one's bytes at once instead of making them again. Bounded: emptied when it
 * holds GROUP_LIMIT groups (paths with a query string that changes on every request would
 * otherwise fill it).
 */
export class GroupBytes {
  private readonly byFirst = new Map<string, GroupEntry[]>();
  /** Groups held. */
  size = 0;

  constructor(private readonly make: (a: string, b: string, c: string) => string) {}

  of(a: string, b: string, c: string): Uint8Array {
    let list = this.byFirst.get(a);
    if (list !== undefined) {
      for (let i = 0; i < list.length; i++) {
        const e = list[i];
        if (e.b === b && e.c === c) return e.out;
      }
    } else {
      if (this.size >= GROUP_LIMIT) {
        this.byFirst.clear();
        this.size = 0;
      }
      list = [];
      this.byFirst.set(a, list);
    }
    const out = utf8Bytes(this.make(a, b, c));
    list.push({ b, c, out });
    this.size++;
    return out;
  }
}

/** Groups a GroupBytes holds at most (each a line's worth of bytes at most). */
export const GROUP_LIMIT = 1024;
