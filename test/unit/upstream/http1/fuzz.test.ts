/**
 * Fuzz against a real node:http server: random request bodies, answer sizes, framings
 * (content-length, chunked in random pieces, close-delimited), connection: close and a short
 * server keep-alive timeout with random pauses (so idle closes race new requests). Every answer
 * must arrive byte for byte; the seed is printed on failure.
 */
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Http1Pool } from '../../../../src/upstream/http1/pool.js';
import { request } from './helpers.js';

/** Deterministic bytes for (seed, length). */
function bytesOf(seed: number, length: number): Buffer {
  const out = Buffer.allocUnsafe(length);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < length; i++) {
    x ^= x << 13; x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5; x >>>= 0;
    out[i] = x & 0xff;
  }
  return out;
}

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

let server: Server;
let port = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (d: Buffer) => parts.push(d));
    req.on('end', () => {
      const body = Buffer.concat(parts);
      const seed = Number(req.headers['x-seed']);
      const size = Number(req.headers['x-size']);
      const mode = String(req.headers['x-mode']);
      const answer = bytesOf(seed, size);
      const digest = createHash('sha256').update(body).digest('hex');
      res.setHeader('x-body-sha256', digest);
      if (req.headers['x-close'] === '1') res.setHeader('connection', 'close');
      if (mode === 'length') {
        res.setHeader('content-length', size);
        res.end(answer);
        return;
      }
      if (mode === 'close') {
        res.useChunkedEncodingByDefault = false;
        res.shouldKeepAlive = false;
      }
      res.writeHead(200);
      const r = rng(seed);
      let at = 0;
      const step = (): void => {
        while (at < size) {
          const n = Math.min(size - at, 1 + Math.floor(r() * 20_000));
          res.write(answer.subarray(at, at + n));
          at += n;
          if (r() < 0.3) {
            setImmediate(step);
            return;
          }
        }
        if (mode === 'trailers') res.addTrailers({ 'x-trailer': digest.slice(0, 8) });
        res.end();
      };
      step();
    });
  });
  server.keepAliveTimeout = 15;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as { port: number }).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

describe('HTTP/1.1 client fuzz against node:http', () => {
  it('random bodies, sizes, framings and keep-alive patterns arrive byte for byte', async () => {
    const seed = Number(process.env.HTTP1_FUZZ_SEED ?? Date.now() % 1_000_000);
    const r = rng(seed);
    // The idle closes it stages race new requests, which are resent: a window no event-loop lag misses.
    const pool = new Http1Pool('127.0.0.1', port, { connections: 4, idleRaceMs: 2000 });
    const modes = ['length', 'chunked', 'trailers', 'close'];
    let failed: string | null = null;
    const one = async (i: number): Promise<void> => {
      const reqSeed = Math.floor(r() * 2 ** 31);
      const size = r() < 0.2 ? 0 : Math.floor(r() ** 3 * 300_000);
      const reqSize = r() < 0.3 ? 0 : Math.floor(r() ** 3 * 200_000);
      const mode = modes[Math.floor(r() * modes.length)];
      const close = r() < 0.1 ? '1' : '0';
      const body = bytesOf(reqSeed ^ 0x5a5a, reqSize);
      if (r() < 0.2) await new Promise((res) => setTimeout(res, Math.floor(r() * 25)));
      const a = await request(pool, {
        method: 'POST', path: `/f/${i}`, body,
        headers: ['x-seed', String(reqSeed), 'x-size', String(size), 'x-mode', mode, 'x-close', close],
      });
      const what = `seed ${seed} request ${i} (mode ${mode}, size ${size}, request body ${reqSize}, close ${close})`;
      if (a.error !== null) failed ??= `${what}: ${a.error.message}`;
      else if (!a.body.equals(bytesOf(reqSeed, size))) failed ??= `${what}: body differs (${a.body.length} bytes)`;
      else if (a.headers[a.headers.indexOf('x-body-sha256') + 1] !== createHash('sha256').update(body).digest('hex')) failed ??= `${what}: request body differs`;
      else if (mode === 'close' && a.headers.some((h) => /^(transfer-encoding|content-length)$/i.test(h))) failed ??= `${what}: answer was not close-delimited`;
      else if (mode === 'trailers' && a.trailers?.[1] !== createHash('sha256').update(body).digest('hex').slice(0, 8)) failed ??= `${what}: trailers ${JSON.stringify(a.trailers)}`;
    };
    let next = 0;
    const total = 400;
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (next < total) await one(next++);
    }));
    pool.close();
    expect(failed).toBeNull();
  });
});
