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

/** A pod that answers `{}` to every request and keeps each request's head (latin1 bytes), in order. */
async function capturingPod(): Promise<{ port: number; heads: Buffer[]; close: () => void }> {
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
  return { port: await listenLocal(pod), heads, close: () => pod.close() };
}

/** Sends a chat request whose `x-note` header value is `bytes`, as is; the bytes of that value as the pod got it. */
async function noteAtPod(routerUrl: string, pod: { heads: Buffer[] }, bytes: Buffer): Promise<Buffer> {
  const body = chat();
  const u = new URL(routerUrl);
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
  const text = pod.heads.pop()!.toString('latin1');
  expect(text).not.toMatch(/\r\n(x-injected|transfer-encoding)/i);
  const line = text.split('\r\n').find((l) => l.startsWith('x-note: '));
  return Buffer.from(line === undefined ? '' : line.slice('x-note: '.length), 'latin1');
}

describe('request header values upstream (raw pod)', () => {
  it('a value with characters outside ASCII reaches the pod as the client\'s UTF-8 bytes, never as CR or LF that start a header', async () => {
    const pod = await capturingPod();
    const router = await startRouter(resourcesFor([{ name: 'raw-pod', port: pod.port }]), { workers: 1 });
    try {
      const values = [
        'caf\u00e9 \u2615 ok',
        // Narrowed to one byte each: `a`, CR, LF, then a header line of the client's.
        'a\u010d\u010ax-injected:\u0120yes',
        'a\u010d\u010atransfer-encoding:\u0120chunked',
      ];
      for (const value of values) {
        const bytes = Buffer.from(value, 'utf8');
        const got = await noteAtPod(router.url, pod, bytes);
        // The client's bytes (a build of the server that cuts a value at its first byte above 0x7f
        // leaves the ASCII before it), never one byte per character.
        expect(got.length).toBeGreaterThanOrEqual(bytes.findIndex((b) => b > 0x7f));
        expect(got.toString('hex')).toBe(bytes.subarray(0, got.length).toString('hex'));
      }
    } finally {
      await router.kill('SIGKILL');
      pod.close();
    }
  });

  it('as configuration.md says: bytes above 0x7f at either end of a value are cut (the server trims them as spaces); a byte that is not UTF-8 within one arrives as U+FFFD', async () => {
    const pod = await capturingPod();
    const router = await startRouter(resourcesFor([{ name: 'raw-pod', port: pod.port }]), { workers: 1 });
    try {
      const cases: [Buffer, string][] = [
        [Buffer.from('Jos\u00e9', 'utf8'), 'Jos'],
        [Buffer.from('\u00c9mile Zola', 'utf8'), 'mile Zola'],
        [Buffer.from('\u2603', 'utf8'), ''],
        [Buffer.from('a \u2603 b', 'utf8'), Buffer.from('a \u2603 b', 'utf8').toString('latin1')],
        [Buffer.from([0x61, 0xff, 0x62]), 'a\u00ef\u00bf\u00bdb'],
      ];
      for (const [bytes, expected] of cases) expect((await noteAtPod(router.url, pod, bytes)).toString('latin1'), bytes.toString('hex')).toBe(expected);
    } finally {
      await router.kill('SIGKILL');
      pod.close();
    }
  });
});
