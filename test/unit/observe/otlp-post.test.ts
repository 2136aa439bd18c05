import { afterEach, describe, expect, it } from 'vitest';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { CollectorPost } from '../../../src/observe/otlp-post.js';
import { unusedPort } from '../../helpers/processes.js';

interface Seen { body: string; raw: Buffer; headers: IncomingMessage['headers']; socket: Socket }

/**
 * A real HTTP server standing in for a collector; `answer` decides per request (its index and
 * whether it came on a connection used before): a status, or 'reset' (the socket destroyed
 * without an answer), or 'never' (no answer at all).
 */
async function collector(answer: (i: number, reused: boolean) => number | 'reset' | 'never'): Promise<{ url: string; seen: Seen[]; server: Server }> {
  const seen: Seen[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const reused = sockets.has(req.socket);
      sockets.add(req.socket);
      seen.push({ body: Buffer.concat(chunks).toString('utf8'), raw: Buffer.concat(chunks), headers: req.headers, socket: req.socket });
      const a = answer(seen.length - 1, reused);
      if (a === 'reset') req.socket.destroy();
      else if (a !== 'never') res.writeHead(a, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`, seen, server };
}

describe('CollectorPost: the export\'s POST over node:http', () => {
  const servers: Server[] = [];
  const posts: CollectorPost[] = [];
  afterEach(async () => {
    for (const p of posts.splice(0)) p.close();
    await Promise.all(servers.splice(0).map((s) => new Promise((r) => { s.closeAllConnections(); s.close(r); })));
  });
  const start = async (answer: Parameters<typeof collector>[0], timeoutMs = 5000) => {
    const c = await collector(answer);
    servers.push(c.server);
    const post = new CollectorPost(c.url, { 'content-type': 'application/json', 'x-tenant': 't1' }, timeoutMs);
    posts.push(post);
    return { ...c, post };
  };

  it('sends the bytes as they are with the headers, answers the status, and keeps the connection for the next', async () => {
    const c = await start((i) => (i === 0 ? 200 : 503));
    const body = Buffer.from('{"resourceSpans":[]}é');
    expect(await c.post.send(body)).toEqual({ status: 200, failure: null });
    expect(await c.post.send(body.subarray(0, 10))).toEqual({ status: 503, failure: null });
    expect(c.seen.map((s) => s.body)).toEqual(['{"resourceSpans":[]}é', '{"resource']);
    expect(c.seen[0].headers).toMatchObject({ 'content-type': 'application/json', 'x-tenant': 't1', 'content-length': String(body.length) });
    expect(c.seen[1].socket).toBe(c.seen[0].socket);
  });

  it('with compression, sends the bytes gzipped (content-encoding: gzip, the length of what is sent), as many times as asked', async () => {
    const c = await collector(() => 200);
    servers.push(c.server);
    const post = new CollectorPost(c.url, { 'content-type': 'application/json' }, 5000, { compression: 'gzip' });
    posts.push(post);
    const body = Buffer.from(`{"resourceSpans":[${'{"name":"POST /v1/completions"},'.repeat(300)}{}]}é`);
    expect(await post.send(body)).toEqual({ status: 200, failure: null });
    expect(await post.send(body.subarray(0, 40))).toEqual({ status: 200, failure: null });
    expect(c.seen.map((x) => x.headers['content-encoding'])).toEqual(['gzip', 'gzip']);
    expect(gunzipSync(c.seen[0].raw).equals(body)).toBe(true);
    expect(gunzipSync(c.seen[1].raw).equals(body.subarray(0, 40))).toBe(true);
    expect(Number(c.seen[0].headers['content-length'])).toBe(c.seen[0].raw.length);
    expect(c.seen[0].raw.length).toBeLessThan(body.length / 10);
  });

  it('resolves once the request is closed: the same buffer filled again and sent goes out as it is then', async () => {
    const c = await start(() => 200);
    const buf = Buffer.from('first batch');
    await c.post.send(buf);
    buf.write('other batch');
    await c.post.send(buf);
    expect(c.seen.map((s) => s.body)).toEqual(['first batch', 'other batch']);
  });

  it('a kept connection the collector closed as the request went out: sent once more on a new connection, which answers', async () => {
    const c = await start((i, reused) => (reused ? 'reset' : 200));
    expect(await c.post.send(Buffer.from('a'))).toEqual({ status: 200, failure: null });
    expect(await c.post.send(Buffer.from('b'))).toEqual({ status: 200, failure: null });
    expect(c.seen.map((s) => s.body)).toEqual(['a', 'b', 'b']);
    expect(c.seen[2].socket).not.toBe(c.seen[1].socket);
  });

  it('once only: a new connection that fails too, or a first request that fails, is a failure', async () => {
    const c = await start((i) => (i === 0 ? 200 : 'reset'));
    await c.post.send(Buffer.from('a'));
    const failed = await c.post.send(Buffer.from('b'));
    expect(failed.status).toBe(0);
    expect(failed.failure).toMatch(/socket hang up|ECONNRESET/);
    expect(c.seen.map((s) => s.body)).toEqual(['a', 'b', 'b']); // kept connection, then one new one
    const fresh = await start(() => 'reset');
    expect((await fresh.post.send(Buffer.from('c'))).failure).toMatch(/socket hang up|ECONNRESET/);
    expect(fresh.seen).toHaveLength(1); // a new connection that fails is not tried again
  });

  it('no answer within the timeout: a failure saying so, and the connection given up', async () => {
    const c = await start(() => 'never', 300);
    const t0 = Date.now();
    expect(await c.post.send(Buffer.from('a'))).toEqual({ status: 0, failure: 'no answer within 300 ms' });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
    expect(c.seen[0].socket.destroyed || await new Promise((r) => c.seen[0].socket.once('close', () => r(true)))).toBe(true);
  });

  it('nothing listening: a failure naming the refusal', async () => {
    const post = new CollectorPost(`http://127.0.0.1:${await unusedPort()}/v1/traces`, {}, 2000);
    posts.push(post);
    const r = await post.send(Buffer.from('a'));
    expect(r.status).toBe(0);
    expect(r.failure).toContain('ECONNREFUSED');
  });
});
