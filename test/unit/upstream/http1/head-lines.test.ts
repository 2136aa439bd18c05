/**
 * The two readings of a response head's header lines: from the bytes of a head whole in one
 * packet (scanHead + headersAt) and from the text of one that came in pieces (headerLines). They
 * must give the same names and values, and refuse the same heads.
 */
import { describe, expect, it } from 'vitest';
import { Http1Error } from '../../../../src/upstream/http1/errors.js';
import { HEAD_INCOMPLETE, HEAD_IRREGULAR, HeadMarks, headerLines, headersAt, scanHead } from '../../../../src/upstream/http1/head-lines.js';

const b = (s: string): Buffer => Buffer.from(s, 'latin1');

/** Both readings of a whole head (`head` ends with the blank line). */
function bothReadings(head: string): { bytes: string[]; text: string[]; end: number } {
  const buf = b(`junk${head}body`);
  const marks = new HeadMarks();
  const end = scanHead(buf, 4, marks);
  const text = buf.toString('latin1', 4, end - 2);
  const from = text.indexOf('\r\n') + 2;
  return { bytes: headersAt(text, marks), text: headerLines(text, from), end };
}

/** The text reading of a whole head (`head` ends with the blank line): its header lines, or null when it refuses the head (with an Http1Error). */
function textReading(head: string): string[] | null {
  const text = head.slice(0, -2);
  try {
    return headerLines(text, text.indexOf('\r\n') + 2);
  } catch (e) {
    expect(e, JSON.stringify(head)).toBeInstanceOf(Http1Error);
    return null;
  }
}

/**
 * The byte reading of `head` written at `offset` of `pool`, checked against `expected` (the text
 * reading): irregular when that refused it, else the same lines. Returns its marks.
 */
function checkByteReading(pool: ArrayBuffer, offset: number, head: string, expected: string[] | null): HeadMarks {
  const buf = Buffer.from(pool, offset, head.length + 4);
  buf.write(head + 'body', 0, 'latin1');
  const marks = new HeadMarks();
  const end = scanHead(buf, 0, marks);
  if (expected === null) {
    expect(end, JSON.stringify(head)).toBe(HEAD_IRREGULAR);
  } else {
    expect(end, JSON.stringify(head)).toBe(head.length);
    expect(headersAt(buf.toString('latin1', 0, end - 2), marks)).toEqual(expected);
  }
  return marks;
}

describe('response head lines', () => {
  it('names as received, values without the SP and HTAB around them, obs-text kept; both readings agree', () => {
    const head = 'HTTP/1.1 200 OK\r\nContent-Type:application/json\r\nX-Pad: \t a b \t\r\nX-Empty:\r\nX-Latin: caf\u00e9\r\nx-mock-pod: mock\r\n\r\n';
    const { bytes, text, end } = bothReadings(head);
    expect(bytes).toEqual(['Content-Type', 'application/json', 'X-Pad', 'a b', 'X-Empty', '', 'X-Latin', 'caf\u00e9', 'x-mock-pod', 'mock']);
    expect(text).toEqual(bytes);
    expect(end).toBe(4 + head.length);
  });

  it('more header lines than the marks first hold (32): all of them, in order', () => {
    const lines = Array.from({ length: 100 }, (_, i) => `X-H${i}: v${i}`);
    const { bytes, text } = bothReadings(`HTTP/1.1 200 OK\r\n${lines.join('\r\n')}\r\n\r\n`);
    expect(bytes).toHaveLength(200);
    expect(bytes.slice(198)).toEqual(['X-H99', 'v99']);
    expect(text).toEqual(bytes);
  });

  it('a status line alone: no header lines', () => {
    expect(bothReadings('HTTP/1.1 204 No Content\r\n\r\n').bytes).toEqual([]);
  });

  it('every prefix of a head is incomplete; the whole is not', () => {
    const head = b('HTTP/1.1 200 OK\r\nContent-Length: 3\r\nX-A: 1\r\n\r\n');
    for (let k = 0; k < head.length; k++) expect(scanHead(head.subarray(0, k), 0, new HeadMarks())).toBe(HEAD_INCOMPLETE);
    expect(scanHead(head, 0, new HeadMarks())).toBe(head.length);
  });

  it('irregular lines are left to the text reading, which names the fault', () => {
    const cases: [string, RegExp][] = [
      ['HTTP/1.1 200 OK\r\nX-A 1\r\n\r\n', /header line without a colon/],
      ['HTTP/1.1 200 OK\r\nX A: 1\r\n\r\n', /bad header name "X A"/],
      ['HTTP/1.1 200 OK\r\n: 1\r\n\r\n', /bad header name ""/],
      ['HTTP/1.1 200 OK\r\nX-A: 1\u00002\r\n\r\n', /bare CR or LF or NUL/],
      ['HTTP/1.1 200 OK\r\nX-A: 1\n\r\n', /bare CR or LF or NUL/],
      ['HTTP/1.1 200 OK\r\nX-A: 1\r2\r\n\r\n', /bare CR or LF or NUL/],
      ['HTTP/1.1 200 OK\r\n folded: 1\r\n\r\n', /bad header name/],
    ];
    for (const [head, message] of cases) {
      expect(scanHead(b(head), 0, new HeadMarks()), head).toBe(HEAD_IRREGULAR);
      const text = head.slice(0, -2);
      let err: unknown = null;
      try {
        headerLines(text, text.indexOf('\r\n') + 2);
      } catch (e) {
        err = e;
      }
      expect(err, head).toBeInstanceOf(Http1Error);
      expect((err as Error).message).toMatch(message);
    }
  });

  it('line ends found four bytes at a time: any byte at any place of a word, heads at any offset of their buffer, buffers in turn; whether all are ASCII', () => {
    // Every value of lengths 0 to 9 with one byte in it at each place (a low control that is not
    // a line end, a bare CR or LF, a NUL, bytes above 0x7f), each head written at offsets 0 to 7
    // of two ArrayBuffers used in turn: the byte reading must agree with the text reading, which
    // checks the head character by character.
    const specials = [0x09, 0x0b, 0x0c, 0x01, 0x0d, 0x0a, 0x00, 0x0e, 0x7f, 0x80, 0xff];
    // Both filled with letters, so that a word read from the wrong one would hide a line end.
    const pools = [new ArrayBuffer(256), new ArrayBuffer(256)];
    for (const pool of pools) new Uint8Array(pool).fill(0x78);
    let heads = 0;
    let irregular = 0;
    for (let len = 0; len <= 9; len++) {
      for (let place = 0; place < Math.max(len, 1); place++) {
        for (const special of specials) {
          const value = Array.from({ length: len }, (_, k) => (k === place ? String.fromCharCode(special) : String.fromCharCode(0x61 + (k % 26)))).join('');
          const head = `HTTP/1.1 200 OK\r\nX-A: ${value}\r\nX-Longer-Name: ${value}${value}\r\n\r\n`;
          const expected = textReading(head);
          for (let offset = 0; offset < 8; offset++) {
            const marks = checkByteReading(pools[heads++ % 2], offset, head, expected);
            if (expected === null) irregular++;
            else expect(marks.ascii, JSON.stringify(head)).toBe(!/[\x80-\xff]/.test(head));
          }
        }
      }
    }
    expect(irregular).toBeGreaterThan(0);
    expect(irregular).toBeLessThan(heads);
  });

  it('names read four bytes at a time while they are letters and hyphens: every byte at every place of a name, heads at any offset of their buffer', () => {
    // Names of 1 to 10 bytes, letters of both cases and hyphens around one byte of any value (all
    // 256) at each place, each head at offsets 0 to 3 of a buffer of letters: a name with a byte
    // that is no token character is irregular, as the text reading says; one without is read.
    const pool = new ArrayBuffer(128);
    new Uint8Array(pool).fill(0x78);
    const filler = 'aZ-zA';
    let read = 0;
    let refused = 0;
    for (let len = 1; len <= 10; len++) {
      for (let place = 0; place < len; place++) {
        for (let byte = 0; byte < 256; byte++) {
          if (byte === 0x3a || byte === 0x0d || byte === 0x0a) continue; // these end the name or the line, tested above
          const name = Array.from({ length: len }, (_, k) => (k === place ? String.fromCharCode(byte) : filler[k % filler.length])).join('');
          const head = `HTTP/1.1 200 OK\r\n${name}: v\r\n\r\n`;
          const expected = textReading(head);
          for (let offset = 0; offset < 4; offset++) {
            checkByteReading(pool, offset, head, expected);
            if (expected === null) refused++;
            else read++;
          }
        }
      }
    }
    // 77 token characters and 176 other bytes at each of the 55 places.
    expect(read).toBe(55 * 77 * 4);
    expect(refused).toBe(55 * (253 - 77) * 4);
  });
});
