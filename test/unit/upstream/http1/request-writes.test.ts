import { describe, expect, it } from 'vitest';
import { connect, type Socket } from 'node:net';
import { once } from 'node:events';
import { flushRequestWrites, requestHead, writeRequest } from '../../../../src/upstream/http1/request-head.js';
import { pausedServer } from '../../../helpers/paused-server.js';

/** A socket that records what is written to it. */
function recordingSocket(): { socket: Socket; writes: string[] } {
  const writes: string[] = [];
  const s = {
    destroyed: false,
    connecting: false,
    writableLength: 0,
    write(chunk: Buffer | string) { writes.push(chunk.toString()); return true; },
    cork() { writes.push('cork'); },
    uncork() { writes.push('uncork'); },
  };
  return { socket: s as unknown as Socket, writes };
}

const turnEnd = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('writeRequest: requests of one buffer go out at the end of the turn', () => {
  it('writes the turn\'s requests after it, each in one write, head and body together', async () => {
    const a = recordingSocket();
    const b = recordingSocket();
    const body = Buffer.from('{"model":"m"}');
    writeRequest(a.socket, requestHead('POST', '/v1/completions', 'pod:80', ['x-request-id', 'r1'], body), body);
    writeRequest(b.socket, requestHead('POST', '/v1/chat/completions', 'pod:80', [], body), body);
    expect(a.writes).toEqual([]);
    expect(b.writes).toEqual([]);
    await turnEnd();
    expect(a.writes).toEqual(['POST /v1/completions HTTP/1.1\r\nhost: pod:80\r\nx-request-id: r1\r\ncontent-length: 13\r\n\r\n{"model":"m"}']);
    expect(b.writes).toHaveLength(1);
    expect(b.writes[0].startsWith('POST /v1/chat/completions HTTP/1.1\r\n')).toBe(true);
  });

  it('skips a socket destroyed before the turn ended', async () => {
    const a = recordingSocket();
    const body = Buffer.from('{}');
    writeRequest(a.socket, requestHead('POST', '/', 'pod:80', [], body), body);
    (a.socket as unknown as { destroyed: boolean }).destroyed = true;
    await turnEnd();
    expect(a.writes).toEqual([]);
  });

  it('turn after turn, each request is written once, to its own socket (a turn of three, then one)', async () => {
    const body = Buffer.from('{}');
    const sockets = [recordingSocket(), recordingSocket(), recordingSocket()];
    sockets.forEach((s, i) => writeRequest(s.socket, requestHead('POST', `/first-${i}`, 'pod:80', [], body), body));
    await turnEnd();
    writeRequest(sockets[2].socket, requestHead('POST', '/second', 'pod:80', [], body), body);
    await turnEnd();
    await turnEnd();
    expect(sockets.map((s) => s.writes.map((w) => w.split(' ')[1]))).toEqual([['/first-0'], ['/first-1'], ['/first-2', '/second']]);
  });

  it('flushRequestWrites() writes the queued requests at once', () => {
    const a = recordingSocket();
    const body = Buffer.from('{}');
    writeRequest(a.socket, requestHead('POST', '/', 'pod:80', [], body), body);
    flushRequestWrites();
    expect(a.writes).toHaveLength(1);
  });

  it('a bodyless request and a large body are written at once (head and large body corked)', () => {
    const a = recordingSocket();
    writeRequest(a.socket, requestHead('GET', '/metrics', 'pod:80', [], null), null);
    expect(a.writes).toEqual(['GET /metrics HTTP/1.1\r\nhost: pod:80\r\n\r\n']);
    const b = recordingSocket();
    const big = Buffer.alloc(64 * 1024, 0x61);
    writeRequest(b.socket, requestHead('POST', '/', 'pod:80', [], big), big);
    expect(b.writes.map((w) => (w.length > 100 ? `${w.length} bytes` : w.split('\r\n')[0]))).toEqual(['cork', 'POST / HTTP/1.1', '65536 bytes', 'uncork']);
  });
});

describe('writeRequest: the memory a turn\'s requests are put together in', () => {
  it('sends every request\'s bytes as made, also when the kernel does not take a write whole', async () => {
    const { server, received, read } = await pausedServer();
    const port = (server.address() as { port: number }).port;
    const sockets: Socket[] = [];
    for (let i = 0; i < 3; i++) {
      const s = connect(port, '127.0.0.1');
      await once(s, 'connect');
      sockets.push(s);
    }
    while (received.length < sockets.length) await turnEnd();
    const sent: Buffer[][] = sockets.map(() => []);
    let heldWrites = 0;
    let n = 0;
    // Bodies of 2–16 KB, each with bytes of its own, until writes were held back a few times (the
    // peers do not read, so the kernel's buffers fill and it stops taking whole writes).
    for (let turn = 0; turn < 5000 && (heldWrites < 4 * sockets.length || turn < 40); turn++) {
      sockets.forEach((s, i) => {
        const size = 2048 + ((n * 7919) % (14 * 1024));
        const body = Buffer.alloc(size, n % 251);
        body.writeUInt32BE(n, 0);
        const head = requestHead('POST', `/r${n}`, 'pod:80', [], body);
        n++;
        writeRequest(s, head, body);
        sent[i].push(Buffer.concat([Buffer.from(head, 'latin1'), body]));
      });
      await turnEnd();
      for (const s of sockets) if (s.writableLength > 0) heldWrites++;
    }
    expect(heldWrites).toBeGreaterThanOrEqual(4 * sockets.length);
    read();
    const want = sent.map((parts) => Buffer.concat(parts));
    const total = (): number => received.reduce((a, c) => a + c.reduce((x, b) => x + b.length, 0), 0);
    const wantTotal = want.reduce((a, b) => a + b.length, 0);
    for (let waited = 0; total() < wantTotal && waited < 2000; waited++) await new Promise((r) => setTimeout(r, 5));
    // The server takes connections in their order: connection i's bytes are received[i].
    received.forEach((chunks, i) => expect(Buffer.concat(chunks).equals(want[i])).toBe(true));
    sockets.forEach((s) => s.destroy());
    server.close();
  });
});
