import { connect, createServer as createNetServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { listenLocal, resourcesFor, startRouter } from '../helpers/processes.js';

/**
 * Request header values upstream: the server hands each value over as text decoded from UTF-8,
 * and the HTTP/1.1 client writes one byte per character (latin1). A value's characters above
 * U+00FF must reach the pod as the client's UTF-8 bytes, never narrowed to one byte each, which
 * for U+010D and U+010A are CR and LF: lines of the client's making in the pod's request head.
 */

function chat(): string {
  return JSON.stringify({ model: 'sf-model', messages: [{ role: 'user', content: 'hi' }] });
}

describe('request header values upstream (raw pod)', () => {
  it('a value with characters outside ASCII reaches the pod as the client\'s UTF-8 bytes, never as CR or LF that start a header', async () => {
    const heads: Buffer[] = [];
    const pod = createNetServer((s) => {
      let got = Buffer.alloc(0);
      s.on('error', () => {});
      s.on('data', (d: Buffer) => {
        got = Buffer.concat([got, d]);
        const end = got.indexOf('\r\n\r\n');
        const length = /content-length: (\d+)/.exec(got.subarray(0, end).toString('latin1'));
        if (end < 0 || length === null || got.length < end + 4 + Number(length[1])) return;
        heads.push(got.subarray(0, end));
        got = got.subarray(end + 4 + Number(length[1]));
        s.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}');
      });
    });
    const port = await listenLocal(pod);
    const router = await startRouter(resourcesFor([{ name: 'raw-pod', port }]), { workers: 1 });
    try {
      const values = [
        'caf\u00e9 \u2615 ok',
        // Narrowed to one byte each: `a`, CR, LF, then a header line of the client's.
        'a\u010d\u010ax-injected:\u0120yes',
        'a\u010d\u010atransfer-encoding:\u0120chunked',
      ];
      for (const value of values) {
        const bytes = Buffer.from(value, 'utf8');
        const body = chat();
        const u = new URL(router.url);
        const socket = connect(Number(u.port), u.hostname);
        socket.on('error', () => {});
        let raw = '';
        socket.setEncoding('latin1');
        const answered = new Promise<void>((r) => socket.on('data', (d: string) => {
          raw += d;
          if (raw.endsWith('{}')) r();
        }));
        socket.write(Buffer.concat([Buffer.from(`POST /v1/chat/completions HTTP/1.1\r\nhost: ${u.host}\r\nx-note: `), bytes,
          Buffer.from(`\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`)]));
        await answered;
        socket.destroy();
        expect(raw).toMatch(/^HTTP\/1\.1 200 /);
        const head = heads.pop()!;
        const text = head.toString('latin1');
        expect(text).not.toMatch(/\r\n(x-injected|transfer-encoding)/i);
        const line = text.split('\r\n').find((l) => l.startsWith('x-note: '))!;
        // The client's bytes (a build of the server that cuts a value at its first byte above 0x7f
        // leaves the ASCII before it), never one byte per character.
        const got = Buffer.from(line.slice('x-note: '.length), 'latin1');
        expect(got.length).toBeGreaterThanOrEqual(bytes.findIndex((b) => b > 0x7f));
        expect(got.toString('hex')).toBe(bytes.subarray(0, got.length).toString('hex'));
      }
    } finally {
      await router.kill('SIGKILL');
      pod.close();
    }
  });
});
