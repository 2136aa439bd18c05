/**
 * A server that answers and then resets the connection (closing with unread request bytes makes
 * the kernel send a reset) while the request is still being written: the write fails (EPIPE,
 * ECONNRESET) with the answer still unread in the kernel. The answer must be read and delivered,
 * not dropped with the socket.
 *
 * Which comes first, the failed write or the read of the answer, depends on the event loop's
 * order of events, so the test fixes it: the server is another process, and the client's event
 * loop is held (a synchronous wait) until the server has answered and reset; the next request's
 * write then fails before anything is read.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isConnectFailure } from '../../../../src/upstream/http1/errors.js';
import { Http1Pool } from '../../../../src/upstream/http1/pool.js';
import { header, post, request, type Answer } from './helpers.js';

/**
 * Answers the first request 200 (kept alive) and stops listening; 20 ms later, unasked, writes the
 * answer given as its second argument on that connection and, 20 ms after that (the answer has
 * left), resets it; then creates the file given as its first argument. Prints its port.
 */
const POD = `
const net = require('node:net'); const fs = require('node:fs');
const server = net.createServer((s) => {
  server.close();
  let seen = '';
  s.on('error', () => {});
  s.on('data', (d) => {
    if (seen.includes('\\r\\n\\r\\n')) return;
    seen += d.toString('latin1');
    if (!seen.includes('\\r\\n\\r\\n')) return;
    s.write('HTTP/1.1 200 OK\\r\\ncontent-length: 2\\r\\n\\r\\nok');
    setTimeout(() => {
      s.write(process.argv[2]);
      setTimeout(() => { s.resetAndDestroy(); fs.writeFileSync(process.argv[1], ''); }, 20);
    }, 20);
  });
});
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
`;

let pod: ChildProcess | null = null;
let pool: Http1Pool | null = null;
afterEach(() => {
  pool?.close();
  pool = null;
  pod?.kill('SIGKILL');
  pod = null;
});

const WHOLE_413 = 'HTTP/1.1 413 Payload Too Large\r\ncontent-type: text/plain\r\ncontent-length: 9\r\nconnection: close\r\n\r\ntoo large';

function startPod(marker: string, answer: string): Promise<number> {
  const child = spawn(process.execPath, ['-e', POD, marker, answer], { stdio: ['ignore', 'pipe', 'inherit'] });
  pod = child;
  return new Promise((resolve, reject) => {
    child.stdout!.setEncoding('utf8').once('data', (d: string) => resolve(Number(d.trim())));
    child.once('exit', (code) => reject(new Error(`pod exited ${code}`)));
  });
}

/** Holds this process's event loop until `file` exists (nothing is read meanwhile). */
function blockUntilExists(file: string): void {
  const end = Date.now() + 10_000;
  while (!existsSync(file)) if (Date.now() > end) throw new Error(`${file} never appeared`);
}

describe('a server that answers, then resets while the request is still going out', () => {
  /** The second request's outcome, its write made onto the connection the pod answered `answer` on and reset. */
  async function afterReset(answer: string): Promise<Answer> {
    const marker = join(mkdtempSync(join(tmpdir(), 'ir-reset-')), 'reset');
    const port = await startPod(marker, answer);
    pool = new Http1Pool('127.0.0.1', port, { connections: 1, timerResolutionMs: 10, idleRaceMs: 2000 });
    expect((await request(pool)).status).toBe(200);
    blockUntilExists(marker);
    // More than the one-buffer size: written at once by dispatch, onto the reset connection.
    return request(pool, post('/v1/big', Buffer.alloc(64 * 1024, 'a')));
  }

  it('a whole answer read after the failed write is delivered; the connection is not reused', async () => {
    const a = await afterReset(WHOLE_413);
    expect(a.error).toBeNull();
    expect(a.status).toBe(413);
    expect(header(a.headers, 'content-type')).toBe('text/plain');
    expect(a.body.toString()).toBe('too large');
    expect(pool?.stats.connections).toBe(0);
  });

  it('an answer that ends with the connection is delivered at the end read after the reset', async () => {
    const a = await afterReset('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\nbad request');
    expect(a.error).toBeNull();
    expect(a.status).toBe(400);
    expect(a.body.toString()).toBe('bad request');
  });

  it('an answer cut by the reset fails the request with the failed write; no answer at all is the idle-close race, resent once', async () => {
    const a = await afterReset('HTTP/1.1 413 Payload Too Large\r\ncontent-length: 9\r\n\r\ntoo');
    expect(a.status).toBe(413);
    expect(a.error?.code).toMatch(/^(ECONNRESET|EPIPE)$/);
    expect((a.error as NodeJS.ErrnoException).syscall).toBe('write');
    pool!.close();
    pod!.kill('SIGKILL');
    // Nothing read: a reused connection broken at once, so the one resend (to a port now closed).
    const b = await afterReset('');
    expect(b.status).toBe(0);
    expect(isConnectFailure(b.error)).toBe(true);
  });
});
