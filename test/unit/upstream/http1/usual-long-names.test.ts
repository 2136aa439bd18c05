/**
 * The usual long header names recognised in a head's bytes (usual-long-names.ts), and the header
 * list the parser hands over with them (usualNameOfLine): a name is handed over as a constant
 * only when its bytes spell that constant exactly, at any offset of the buffer; any other name is
 * the text as received.
 */
import { describe, expect, it } from 'vitest';
import { SHORTEST_USUAL_LONG_NAME, usualLongName, usualLongNameOf } from '../../../../src/upstream/http1/usual-long-names.js';
import { HeadMarks, headerLines, headersAt, scanHead, usualNameOfLine } from '../../../../src/upstream/http1/head-lines.js';
import { ResponseParser } from '../../../../src/upstream/http1/response-parser.js';

const USUAL = [
  'cache-control', 'Cache-Control', 'content-length', 'Content-Length', 'content-encoding', 'Content-Encoding',
  'proxy-connection', 'Proxy-Connection', 'transfer-encoding', 'Transfer-Encoding',
];

/** `name`'s bytes at `offset` of a buffer with other bytes around them, and usualLongName's answer for them. */
function codeAt(name: string, offset: number): number {
  const buf = Buffer.alloc(offset + name.length + 8, 0x78);
  buf.write(name, offset, 'latin1');
  const view = new DataView(buf.buffer, buf.byteOffset, buf.length);
  return usualLongName(view, offset, name.length);
}

/** Both readings of a head made of these names (each with a value), the byte reading's long names through usualNameOfLine. */
function readings(names: readonly string[], offset: number): { bytes: string[]; text: string[] } {
  const head = `HTTP/1.1 200 OK\r\n${names.map((n, i) => `${n}: v${i}\r\n`).join('')}\r\n`;
  const buf = Buffer.from(`${'j'.repeat(offset)}${head}body`, 'latin1');
  const marks = new HeadMarks();
  const end = scanHead(buf, offset, marks);
  expect(end).toBe(offset + head.length);
  const text = buf.toString('latin1', offset, end - 2);
  const bytes = headersAt(text, marks);
  for (let h = 0; h < bytes.length; h += 2) if (bytes[h].length >= SHORTEST_USUAL_LONG_NAME) bytes[h] = usualNameOfLine(marks, h >> 1, bytes[h]);
  return { bytes, text: headerLines(text, text.indexOf('\r\n') + 2) };
}

/** Every one-byte change of `name` that keeps it a token of the same length: each byte's case flipped, or replaced by `x`, `-` or `0`. */
function nearMisses(name: string): string[] {
  const out: string[] = [];
  for (let k = 0; k < name.length; k++) {
    const c = name[k];
    const flipped = c.toLowerCase() === c ? c.toUpperCase() : c.toLowerCase();
    for (const r of [flipped, 'x', '-', '0']) if (r !== c) out.push(name.slice(0, k) + r + name.slice(k + 1));
  }
  return out;
}

describe('usual long header names', () => {
  it('each usual name is recognised at any offset of the buffer, and its code gives it back', () => {
    for (const name of USUAL) {
      for (let offset = 0; offset < 8; offset++) {
        const code = codeAt(name, offset);
        expect(code, `${name} at ${offset}`).toBeGreaterThan(0);
        expect(usualLongNameOf(code)).toBe(name);
      }
    }
  });

  it('a name one byte away from a usual one (any place, any case) is not recognised', () => {
    for (const name of USUAL) {
      for (const miss of nearMisses(name)) {
        for (let offset = 0; offset < 4; offset++) expect(codeAt(miss, offset), `${miss} at ${offset}`).toBe(0);
      }
    }
  });

  it('other long names, of the usual lengths and longer, are not recognised', () => {
    const others = ['CONTENT-LENGTH', 'Content-length', 'x-request-ids', 'x-ratelimit-a', 'x-forwarded-for-',
      'Transfer-Encodinx', 'access-control-allow-origin', 'x'.repeat(SHORTEST_USUAL_LONG_NAME), 'Content-Lengths'];
    for (const name of others) expect(codeAt(name, 1), name).toBe(0);
  });

  it('usualNameOfLine gives every name as received, usual or not, at any offset; the text reading agrees', () => {
    const names = [...USUAL, ...USUAL.flatMap((n) => nearMisses(n).slice(0, 6)), 'Date', 'x-mock-pod', 'CONTENT-LENGTH'];
    for (let offset = 0; offset < 8; offset++) {
      const { bytes, text } = readings(names, offset);
      expect(bytes.filter((_, i) => i % 2 === 0)).toEqual(names);
      expect(bytes).toEqual(text);
    }
  });

  it('the marks point at the head scanned (where headersAt reads the names), in a pooled buffer and an own one', () => {
    const head = 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n';
    for (const buf of [Buffer.from(`junk${head}`, 'latin1'), Buffer.concat([Buffer.alloc(10), Buffer.from(`junk${head}`, 'latin1')]).subarray(10)]) {
      const marks = new HeadMarks();
      scanHead(buf, 4, marks);
      const seen = new Uint8Array(marks.view.buffer, marks.view.byteOffset + marks.viewStart, head.length);
      expect(Buffer.from(seen).toString('latin1')).toBe(head);
    }
  });

  it('a head read after one from another buffer reads its own bytes', () => {
    // headersAt reads the names from the bytes scanHead last read: a second head in a new buffer must not see the first's.
    const first = readings(['Content-Length'], 3);
    const second = readings(['Content-Lengtx', 'transfer-encoding'], 5);
    expect(first.bytes).toEqual(['Content-Length', 'v0']);
    expect(second.bytes).toEqual(['Content-Lengtx', 'v0', 'transfer-encoding', 'v1']);
  });

  it('the parser hands over every name as received, usual or not, whole or in pieces', () => {
    const names = [...USUAL, ...USUAL.flatMap((n) => nearMisses(n).slice(0, 6)), 'Date', 'CONTENT-LENGTH'];
    const head = Buffer.from(`HTTP/1.1 200 OK\r\n${names.map((n, i) => `${n}: ${/length/i.test(n) ? '0' : `v${i}`}`).join('\r\n')}\r\n\r\n`, 'latin1');
    let got: string[] = [];
    const parser = new ResponseParser({ onHead(_s, h) { got = h; }, onBody() {}, onEnd() {} }, 64 * 1024);
    for (const split of [0, 20, head.length - 1]) {
      parser.reset(true);
      got = [];
      if (split > 0) parser.execute(head.subarray(0, split));
      parser.execute(split > 0 ? head.subarray(split) : head);
      expect(got.filter((_, i) => i % 2 === 0), `split at ${split}`).toEqual(names);
    }
  });
});
