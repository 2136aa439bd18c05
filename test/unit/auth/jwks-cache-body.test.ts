import { createServer, type Server, type ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { JwksCache, MAX_KEY_SET_BYTES } from '../../../src/auth/jwks-cache.js';

/** A key set server that answers each fetch with `answer`; its URL. */
async function serving(answer: (res: ServerResponse) => void): Promise<string> {
  server = createServer((_req, res) => answer(res));
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}/jwks.json`;
}

let server: Server | null = null;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((r) => (server === null ? r() : server.close(() => r())));
  server = null;
});

/** What one fetch of the set logged (a failure says why). */
async function fetchOnce(uri: string, timeoutMs = 2000): Promise<string[]> {
  const lines: string[] = [];
  await new JwksCache(uri, { maxAgeMs: 60_000, cooldownMs: 1000, timeoutMs, log: (m) => lines.push(m) }).refresh();
  return lines;
}

describe('JwksCache: a key set answer is read within bounds', () => {
  it('an answer over MAX_KEY_SET_BYTES, streamed without a length or declared in one, is refused once past the bound, not read whole', async () => {
    const chunked = await serving((res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"keys":[],"pad":"');
      const piece = 'x'.repeat(64 * 1024);
      let sent = 0;
      const more = (): void => {
        while (sent < 64 && res.write(piece)) sent++;
        if (sent < 64) res.once('drain', () => { sent++; more(); });
        else res.end('"}');
      };
      more();
    });
    expect(await fetchOnce(chunked)).toEqual([expect.stringMatching(new RegExp(`failed: the answer is larger than ${MAX_KEY_SET_BYTES} bytes \\(\\d+ at least\\); a key set is a few KB$`))]);
    await new Promise<void>((r) => server!.close(() => r()));
    server = null;
    const declared = await serving((res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(400 * 1024 * 1024) });
      res.write('{"keys":[');
    });
    expect(await fetchOnce(declared)).toEqual([expect.stringMatching(/failed: the answer is larger than 1048576 bytes \(419430400 at least\)/)]);
  });

  it('a body still arriving when the timeout passes is said as such, not as an answer that is not JSON', async () => {
    const drip = await serving((res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const timer = setInterval(() => res.write(' '), 100);
      res.on('close', () => clearInterval(timer));
    });
    expect(await fetchOnce(drip, 400)).toEqual([expect.stringMatching(/failed: no whole answer within 400 ms$/)]);
  });
});
