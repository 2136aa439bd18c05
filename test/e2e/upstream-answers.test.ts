import { readFileSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { spawn } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accessLogRecords, listenLocal, ROOT, resourcesFor, startLoggedRouter, startRouter, tempDir, waitFor, type LoggedRouter, childPids } from '../helpers/processes.js';
import { sample } from '../helpers/metrics-text.js';
import { rawRequest, startHeadRecordingPod } from '../helpers/recording-pod.js';

/**
 * The answer path against a scripted node:http backend: what the backend does is chosen by the
 * request's x-scenario header. Clients are node:http, or a raw socket with a strict decoder where
 * framing matters (node's parser tolerates a missing CRLF after chunk data).
 */

interface Answer { status: number; headers: Record<string, string | string[] | undefined>; rawHeaders: string[]; body: string; length: number; error: string | null }

/** Bodies kept whole up to this size (a long stream is only measured). */
const KEEP_BODY = 1 << 20;

/** POST with node:http; resolves with what arrived and the error that broke it (if any). */
function post(url: string, body: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve) => {
    const u = new URL(url);
    const req = httpRequest({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', agent: false,
      headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...headers } });
    let answer: Answer = { status: 0, headers: {}, rawHeaders: [], body: '', length: 0, error: null };
    let done = false;
    const finish = (error: string | null): void => {
      if (done) return;
      done = true;
      answer.error = error;
      resolve(answer);
    };
    req.on('response', (res) => {
      answer = { status: res.statusCode ?? 0, headers: res.headers, rawHeaders: res.rawHeaders, body: '', length: 0, error: null };
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        answer.length += d.length;
        if (answer.length <= KEEP_BODY) answer.body += d;
        else answer.body = answer.body.slice(-1000) + d.slice(-1000); // keep the end
      });
      res.on('end', () => finish(null));
      res.on('error', (e) => finish(`${(e as NodeJS.ErrnoException).code ?? ''} ${e.message}`));
      res.on('aborted', () => finish('aborted'));
      res.on('close', () => { if (!res.complete) finish('incomplete'); });
    });
    req.on('error', (e) => finish(`${(e as NodeJS.ErrnoException).code ?? ''} ${e.message}`));
    req.end(body);
  });
}

const STUCK_LISTENER = "import socket,time\ns=socket.socket()\ns.bind(('127.0.0.1',0))\ns.listen(0)\nprint(s.getsockname()[1], flush=True)\ntime.sleep(120)";

function chat(model = 'sf-model', extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], ...extra });
}

function sseEvent(content: string): string {
  return `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content } }] })}\n\n`;
}

async function recordOf(file: string, requestId: string): Promise<any> {
  return waitFor(`access record ${requestId}`, () => accessLogRecords(file).find((r) => r.request_id === requestId));
}

/** Peak resident memory (VmHWM, kB) of a process. */
function peakRssKb(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m![1]);
}

/** A scripted backend; `gates` lets a test release a held answer. */
class Backend {
  server!: Server;
  port = 0;
  last: { rawHeaders: string[]; body: string } | null = null;
  /** Events of the last long-sse answer written so far. */
  longWritten = 0;
  readonly gates = new Map<string, () => void>();
  readonly waiting = new Map<string, Promise<void>>();

  gate(name: string): Promise<void> {
    let p = this.waiting.get(name);
    if (p === undefined) {
      p = new Promise<void>((r) => this.gates.set(name, r));
      this.waiting.set(name, p);
    }
    return p;
  }

  open(name: string): void {
    void this.gate(name);
    this.gates.get(name)!();
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (d: string) => { body += d; });
      req.on('end', () => {
        this.last = { rawHeaders: req.rawHeaders, body };
        void this.answer(String(req.headers['x-scenario'] ?? ''), req, res);
      });
    });
    this.port = await listenLocal(this.server);
  }

  private async answer(scenario: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    switch (scenario) {
      case 'sse-slow': { // one event, then waits for the test, then the rest
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(sseEvent('first'));
        await this.gate(String(req.headers['x-gate']));
        res.write(sseEvent(' second'));
        res.end('data: [DONE]\n\n');
        return;
      }
      case 'sse-late': { // nothing until the test says so
        await this.gate(String(req.headers['x-gate']));
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(sseEvent('late'));
        res.end('data: [DONE]\n\n');
        return;
      }
      case 'json-chunked-usage': {
        res.writeHead(200, { 'content-type': 'application/json' }); // no length: chunked
        res.write('{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"hello');
        res.end(' world"}}],"usage":{"prompt_tokens":3,"completion_tokens":7,"total_tokens":10}}');
        return;
      }
      case 'json-chunked-text': {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"hello');
        res.end(' world, how are you today"}}]}');
        return;
      }
      case 'die-after-headers': {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.flushHeaders();
        setTimeout(() => res.socket?.destroy(), 50);
        return;
      }
      case 'die-mid-body': {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(sseEvent('partial'));
        setTimeout(() => res.socket?.destroy(), 50);
        return;
      }
      case 'ratelimit-headers': {
        res.writeHead(200, { 'content-type': 'application/json', 'x-ratelimit-remaining-input-tokens': '424242',
          'x-ratelimit-limit-input-tokens': '999999', 'x-backend-extra': 'kept' });
        res.end('{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":1,"completion_tokens":1}}');
        return;
      }
      case 'many-headers': { // several headers, one repeated, in a known order
        res.writeHead(200, [['Content-Type', 'application/json'], ['x-first', 'one'], ['Set-Cookie', 'a=1'], ['set-cookie', 'b=2'], ['x-empty', ''], ['X-Last', 'end']]);
        res.end('{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}]}');
        return;
      }
      case 'no-own-headers': { // only headers the router drops or writes itself (node:http's response
        // stays open, so the connection closes after it)
        res.socket!.write('HTTP/1.1 200 OK\r\nConnection: close\r\nDate: Thu, 26 Nov 2026 21:00:00 GMT\r\nContent-Length: 2\r\n\r\n{}');
        return;
      }
      case 'hop-by-hop': {
        res.writeHead(200, { 'content-type': 'application/json', connection: 'x-pod-private', 'x-pod-private': 'secret', 'x-pod-public': 'yes' });
        res.end('{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}]}');
        return;
      }
      case 'long-sse': { // many MB of text, no usage
        const events = Number(req.headers['x-events']);
        const piece = sseEvent(` ${String(req.headers['x-piece'])}`); // a header value loses its leading space
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        this.longWritten = 0;
        for (let i = 0; i < events; i++) {
          this.longWritten++;
          if (!res.write(piece)) await new Promise((r) => res.once('drain', r));
        }
        res.end('data: [DONE]\n\n');
        return;
      }
      case 'counted-sse': { // x-events events of x-text (default ' hello world'); then the usage (x-usage: yes, two tokens an event), or a cut (x-cut: yes), then [DONE]
        const events = Number(req.headers['x-events']);
        const text = typeof req.headers['x-text'] === 'string' ? req.headers['x-text'] : ' hello world';
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (let i = 0; i < events; i++) {
          if (!res.write(sseEvent(text))) await new Promise((r) => res.once('drain', r));
        }
        if (req.headers['x-cut'] === 'yes') {
          await new Promise((r) => setTimeout(r, 100));
          res.socket?.destroy();
          return;
        }
        if (req.headers['x-usage'] === 'yes') {
          res.write(`data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 1, completion_tokens: 2 * events, total_tokens: 1 + 2 * events } })}\n\n`);
        }
        res.end('data: [DONE]\n\n');
        return;
      }
      case 'malformed': { // a head the router's client must refuse
        res.socket!.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 12abc\r\n\r\n{}');
        return;
      }
      case 'latin1-header': { // a header value with bytes above 0x7f (UTF-8 text), written raw (node:http's
        // response stays open, so the connection closes after it)
        const body = '{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}]}';
        res.socket!.write(Buffer.concat([
          Buffer.from(`HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nx-pod-note: `),
          Buffer.from('café ☕', 'utf8'), Buffer.from(`\r\n\r\n${body}`)]));
        return;
      }
      case 'sse-media-type-case': { // the media type in another case (RFC 9110: case-insensitive), with the usage chunk
        res.writeHead(200, { 'content-type': 'Text/Event-Stream; charset=utf-8' });
        res.write(sseEvent('hi'));
        res.end(`data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 } })}\n\ndata: [DONE]\n\n`);
        return;
      }
      case 'sse-error-status': { // an error status (x-status) on a stream that ends with the usage chunk asked for
        res.writeHead(Number(req.headers['x-status'] ?? 500), { 'content-type': 'text/event-stream' });
        res.write(sseEvent('partial'));
        res.write(`data: ${JSON.stringify({ error: { message: 'engine failed', type: 'server_error' } })}\n\n`);
        res.end(`data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } })}\n\ndata: [DONE]\n\n`);
        return;
      }
      case 'json-error-usage': { // a JSON error answer that reports usage all the same
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'engine failed', type: 'server_error' }, usage: { prompt_tokens: 3, completion_tokens: 7, total_tokens: 10 } }));
        return;
      }
      case 'no-content': {
        res.writeHead(204, { 'x-pod': 'yes' });
        res.end();
        return;
      }
      case 'hold': { // keeps a request in flight until the test opens the gate
        await this.gate(String(req.headers['x-gate']));
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"choices":[{"index":0,"message":{"role":"assistant","content":"held"}}]}');
        return;
      }
      default:
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":1,"completion_tokens":1}}');
    }
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

const LIMITED = `---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelRoute
metadata: { name: limited-route, namespace: default }
spec:
  modelName: limited-model
  rules: [{ name: r, targetModels: [{ modelServerName: sf-server }] }]
  rateLimit: { inputTokensPerUnit: 100000, outputTokensPerUnit: 100000, unit: day }
---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelServer
metadata: { name: renamed-server, namespace: default }
spec: { model: backend-model, endpoints: [{ name: renamed-1, address: "127.0.0.1:PORT" }] }
---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelRoute
metadata: { name: renamed-route, namespace: default }
spec: { modelName: renamed-model, rules: [{ name: r, targetModels: [{ modelServerName: renamed-server }] }] }
`;

describe('upstream answers over the built router (scripted backend)', () => {
  const backend = new Backend();
  let router: LoggedRouter;

  beforeAll(async () => {
    await backend.start();
    router = await startLoggedRouter(resourcesFor([{ name: 'pod-a', port: backend.port }], { extraRoutes: LIMITED.replace('PORT', String(backend.port)) }), {
      // Generated text is counted on the event loop, so counts are exact bpe (no pool fallback).
      env: { ROUTER_TOKENIZER_INLINE_MAX_CHARS: '1000000' },
    });
  }, 90_000);
  afterAll(async () => {
    await router?.kill('SIGKILL');
    await backend.stop();
  });

  it('a chunked JSON answer is read for usage: reported usage, else the text is counted', async () => {
    const a = await post(`${router.url}/v1/chat/completions`, chat(), { 'x-scenario': 'json-chunked-usage', 'x-request-id': 'chunked-usage' });
    expect(a.error).toBeNull();
    expect(a.status).toBe(200);
    expect(JSON.parse(a.body).usage.completion_tokens).toBe(7);
    const r1 = await recordOf(router.logFile, 'chunked-usage');
    expect(r1.output_tokens).toBe(7);
    expect(r1.input_tokens).toBe(3);

    const b = await post(`${router.url}/v1/chat/completions`, chat(), { 'x-scenario': 'json-chunked-text', 'x-request-id': 'chunked-text' });
    expect(b.status).toBe(200);
    const { bpeCountText } = await import(join(ROOT, 'dist/tokens/bpe-count.js'));
    const r2 = await recordOf(router.logFile, 'chunked-text');
    expect(r2.output_tokens).toBe(bpeCountText('hello world, how are you today'));
    expect(r2.output_tokens).toBeGreaterThan(0);
  });

  it('a pod that dies after its headers, before any body byte, is answered 502 upstream_error', async () => {
    const a = await post(`${router.url}/v1/chat/completions`, chat(), { 'x-scenario': 'die-after-headers', 'x-request-id': 'die-headers' });
    expect(a.status).toBe(502);
    expect(a.error).toBeNull();
    expect(a.body).toMatch(/upstream failed on pod pod-a/);
    const r = await recordOf(router.logFile, 'die-headers');
    expect(r.status_code).toBe(502);
    expect(r.error.type).toBe('upstream_error');
  });

  it('a malformed answer is a 502 upstream_error, with what was wrong in its access record', async () => {
    const a = await post(`${router.url}/v1/chat/completions`, chat(), { 'x-scenario': 'malformed', 'x-request-id': 'malformed' });
    expect(a.status).toBe(502);
    expect(a.error).toBeNull();
    expect(a.body).toMatch(/upstream failed on pod pod-a/);
    const r = await recordOf(router.logFile, 'malformed');
    expect(r.status_code).toBe(502);
    expect(r.error.type).toBe('upstream_error');
    expect(r.error.message).toMatch(/malformed response from upstream: bad content-length "12abc"/);
  });

  it('a response header value with non-ASCII bytes reaches the client byte for byte', async () => {
    const a = await post(`${router.url}/v1/chat/completions`, chat(), { 'x-scenario': 'latin1-header' });
    expect(a.status).toBe(200);
    const i = a.rawHeaders.findIndex((n) => n.toLowerCase() === 'x-pod-note');
    // node:http reads header values as latin1: compare the bytes.
    expect(Buffer.from(a.rawHeaders[i + 1], 'latin1').toString('utf8')).toBe('café ☕');
  });

  it('the pod\'s headers reach the client in their order, repeated ones each on its own line, then x-request-id', async () => {
    const a = await post(`${router.url}/v1/chat/completions`, chat(), { 'x-scenario': 'many-headers', 'x-request-id': 'many-1' });
    expect(a.status).toBe(200);
    const own = a.rawHeaders.flatMap((n, i) => (i % 2 === 0 && !/^(date|uwebsockets|content-length|transfer-encoding|connection)$/i.test(n) ? [[n, a.rawHeaders[i + 1]]] : []));
    // Names are written lower-case.
    expect(own).toEqual([['content-type', 'application/json'], ['x-first', 'one'], ['set-cookie', 'a=1'], ['set-cookie', 'b=2'], ['x-empty', ''], ['x-last', 'end'],
      ['x-request-id', 'many-1']]);
    expect(JSON.parse(a.body).choices[0].message.content).toBe('ok');
  });

  it('an answer whose every header the router drops or writes itself still carries x-request-id, and nothing more', async () => {
    const a = await post(`${router.url}/v1/chat/completions`, chat(), { 'x-scenario': 'no-own-headers', 'x-request-id': 'bare-1' });
    expect(a.status).toBe(200);
    expect(a.body).toBe('{}');
    const names = a.rawHeaders.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
    expect(names.filter((n) => !['date', 'uwebsockets', 'content-length'].includes(n))).toEqual(['x-request-id']);
    expect(a.headers['x-request-id']).toBe('bare-1');
    expect(names.filter((n) => n === 'date')).toHaveLength(1);
  });

  it('a 204 reaches the client without a content-length (RFC 9110 forbids one)', async () => {
    const a = await post(`${router.url}/v1/chat/completions`, chat(), { 'x-scenario': 'no-content', 'x-request-id': 'no-content' });
    expect(a.error).toBeNull();
    expect(a.status).toBe(204);
    expect(a.headers['x-pod']).toBe('yes');
    const names = a.rawHeaders.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
    expect(names).not.toContain('content-length');
    expect(names).not.toContain('transfer-encoding');
    expect((await recordOf(router.logFile, 'no-content')).status_code).toBe(204);
  });

  it('a stream whose media type comes in another case is read as a stream: its usage counted, the usage chunk the router asked for stripped', async () => {
    const a = await post(`${router.url}/v1/chat/completions`, chat('sf-model', { stream: true }), { 'x-scenario': 'sse-media-type-case', 'x-request-id': 'sse-case' });
    expect(a.error).toBeNull();
    expect(a.status).toBe(200);
    expect(a.body).toContain('"hi"');
    expect(a.body).toContain('data: [DONE]');
    expect(a.body).not.toContain('"usage"');
    const r = await recordOf(router.logFile, 'sse-case');
    expect(r.output_tokens).toBe(5);
    expect(r.input_tokens).toBe(3);
  });

  it('a stream answered with an error status still loses the usage chunk the router asked for; one the client asked for stays', async () => {
    for (const status of ['500', '400']) {
      const a = await post(`${router.url}/v1/chat/completions`, chat('sf-model', { stream: true }), { 'x-scenario': 'sse-error-status', 'x-status': status, 'x-request-id': `sse-err-${status}` });
      expect(a.status).toBe(Number(status));
      expect(a.body).toContain('engine failed');
      expect(a.body).toContain('data: [DONE]');
      expect(a.body).not.toContain('"usage"');
      // A stream is read whatever its status: the pod's usage is what is charged and recorded.
      expect(await recordOf(router.logFile, `sse-err-${status}`)).toMatchObject({ status_code: Number(status), input_tokens: 3, output_tokens: 1 });
    }
    // A JSON error answer is not read: the router's input count (8 for this chat) and no output.
    const json = await post(`${router.url}/v1/chat/completions`, chat(), { 'x-scenario': 'json-error-usage', 'x-request-id': 'json-err' });
    expect(json.status).toBe(500);
    expect(await recordOf(router.logFile, 'json-err')).toMatchObject({ status_code: 500, input_tokens: 8, output_tokens: 0 });
    const asked = await post(`${router.url}/v1/chat/completions`, chat('sf-model', { stream: true, stream_options: { include_usage: true } }), { 'x-scenario': 'sse-error-status', 'x-request-id': 'sse-err-asked' });
    expect(asked.status).toBe(500);
    expect(asked.body).toContain('"usage":{');
  });

  it('a pod that dies mid-stream leaves the client a broken answer, never a clean end', async () => {
    const a = await post(`${router.url}/v1/chat/completions`, chat('sf-model', { stream: true }), { 'x-scenario': 'die-mid-body', 'x-request-id': 'die-mid' });
    expect(a.status).toBe(200);
    expect(a.body).toContain('partial');
    expect(a.error).not.toBeNull();
  });

  it('on a limited route the router\'s x-ratelimit-* headers win over the pod\'s', async () => {
    const a = await post(`${router.url}/v1/chat/completions`, chat('limited-model'), { 'x-scenario': 'ratelimit-headers' });
    expect(a.status).toBe(200);
    const names = a.rawHeaders.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
    expect(names.filter((n) => n === 'x-ratelimit-remaining-input-tokens')).toHaveLength(1);
    expect(names.filter((n) => n === 'x-ratelimit-limit-input-tokens')).toHaveLength(1);
    expect(a.headers['x-ratelimit-limit-input-tokens']).toBe('100000');
    expect(a.headers['x-ratelimit-remaining-input-tokens']).not.toBe('424242');
    expect(a.headers['x-backend-extra']).toBe('kept');
    // Not limited: the pod's own headers pass.
    const b = await post(`${router.url}/v1/chat/completions`, chat(), { 'x-scenario': 'ratelimit-headers' });
    expect(b.headers['x-ratelimit-remaining-input-tokens']).toBe('424242');
  });

  it('hop-by-hop headers stop at the router both ways; one content-type goes upstream', async () => {
    const a = await post(`${router.url}/v1/chat/completions`, chat('renamed-model'), {
      'x-scenario': 'hop-by-hop', connection: 'keep-alive, x-client-private', 'x-client-private': 'secret', te: 'trailers',
      'content-type': 'application/x-www-form-urlencoded', 'content-encoding': 'identity', 'x-client-public': 'yes',
    });
    expect(a.status).toBe(200);
    const raw = backend.last!.rawHeaders;
    const sent = raw.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
    expect(sent.filter((n) => n === 'content-type')).toHaveLength(1);
    expect(raw[raw.findIndex((n) => n.toLowerCase() === 'content-type') + 1]).toBe('application/json');
    expect(sent).not.toContain('x-client-private');
    expect(sent).not.toContain('te');
    expect(sent).not.toContain('content-encoding'); // the body was rewritten (model renamed)
    expect(sent).toContain('x-client-public');
    expect(JSON.parse(backend.last!.body).model).toBe('backend-model');
    expect(a.headers['x-pod-private']).toBeUndefined();
    expect(a.headers['x-pod-public']).toBe('yes');
  });

  it('a long stream without usage: worker memory stays bounded and the output count is right', async () => {
    const piece = ' lorem ipsum dolor sit amet consectetur'.repeat(100); // 3900 chars a event
    const events = 20_000; // 78 MB of generated text
    const worker = childPids(router.child.pid!)[0];
    // Warm up (heap and buffers grow to their working size on the first long stream).
    const warm = await post(`${router.url}/v1/completions`, JSON.stringify({ model: 'sf-model', prompt: 'go', stream: true }),
      { 'x-scenario': 'long-sse', 'x-events': String(events / 4), 'x-piece': piece.slice(1) });
    expect(warm.error).toBeNull();
    const before = peakRssKb(worker);
    const a = await post(`${router.url}/v1/completions`, JSON.stringify({ model: 'sf-model', prompt: 'go', stream: true }),
      { 'x-scenario': 'long-sse', 'x-events': String(events), 'x-piece': piece.slice(1), 'x-request-id': 'long-sse' });
    expect(a.error).toBeNull();
    expect(a.length).toBeGreaterThan(piece.length * events);
    expect(a.body).toContain('data: [DONE]');
    const r = await recordOf(router.logFile, 'long-sse');
    const growthMb = (peakRssKb(worker) - before) / 1024;
    console.log(`worker peak RSS grew ${growthMb.toFixed(1)} MB over a ${(piece.length * events / 1e6).toFixed(0)} MB stream`);
    expect(growthMb).toBeLessThan(30); // the text alone is 78 MB
    const { bpeCountText } = await import(join(ROOT, 'dist/tokens/bpe-count.js'));
    // Every event's text starts with a space before a letter: a pre-token boundary, so the whole
    // text counts as the sum of its events.
    expect(r.output_tokens).toBe(events * bpeCountText(piece));
  }, 120_000);

  it('a client that stops reading holds the pod back through the router; then every byte arrives', async () => {
    const piece = 'z'.repeat(3900); // a letter no header or event framing holds
    const events = 20_000; // 78 MB of events
    const u = new URL(router.url);
    const socket = connect(Number(u.port), u.hostname);
    socket.on('error', () => {});
    socket.pause(); // read nothing until the pod has been held back
    const body = JSON.stringify({ model: 'sf-model', prompt: 'go', stream: true });
    socket.write(`POST /v1/completions HTTP/1.1\r\nhost: ${u.host}\r\ncontent-type: application/json\r\nx-scenario: long-sse\r\n`
      + `x-events: ${events}\r\nx-piece: ${piece}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    await waitFor('the pod to start writing', () => backend.longWritten > 0);
    await new Promise((r) => setTimeout(r, 2000));
    // The socket buffers on the way and uWS's own take about 2,000 events (8 MB); without
    // backpressure the router reads on, over 10,000 events a second here, into its memory.
    const heldAt = backend.longWritten;
    console.log(`the pod wrote ${heldAt} of ${events} events while the client read nothing`);
    expect(heldAt).toBeLessThan(5000);
    let xs = 0; // z's received
    let tail = '';
    const ended = new Promise<void>((resolve) => {
      socket.on('data', (d: Buffer) => {
        for (let i = 0; i < d.length; i++) if (d[i] === 0x7a) xs++;
        tail = (tail + d.toString('latin1')).slice(-64);
        if (tail.endsWith('0\r\n\r\n')) resolve();
      });
    });
    socket.resume();
    await ended;
    socket.destroy();
    expect(xs).toBe(events * piece.length);
    expect(tail).toContain('data: [DONE]');
  }, 120_000);

  it('after a connect retry the upstream time is that of the pod that answered; the connect waited ROUTER_UPSTREAM_CONNECT_TIMEOUT', async () => {
    // A listener that never accepts, its queue filled: a connect to it hangs until the router's
    // connect timeout, here 700 ms instead of the default 5 s.
    const stuck = spawn('python3', ['-c', STUCK_LISTENER], { stdio: ['ignore', 'pipe', 'inherit'] });
    const stuckPort = await new Promise<number>((r) => stuck.stdout!.once('data', (d) => r(Number(String(d).trim()))));
    const fillers: Socket[] = [];
    for (let i = 0; i < 2; i++) fillers.push(connect(stuckPort, '127.0.0.1').on('error', () => {}));
    const r2 = await startLoggedRouter(resourcesFor([{ name: 'good', port: backend.port }, { name: 'stuck', port: stuckPort }]), {
      env: { ROUTER_UPSTREAM_CONNECT_TIMEOUT: '700ms' },
    });
    try {
      // One request held on the good pod makes the stuck one the least loaded: tried first.
      const held = post(`${r2.url}/v1/chat/completions`, chat(), { 'x-scenario': 'hold', 'x-gate': 'retry-hold' });
      await waitFor('held request to reach the pod', () => backend.waiting.has('retry-hold'));
      const a = await post(`${r2.url}/v1/chat/completions`, chat(), { 'x-request-id': 'after-retry' });
      expect(a.status).toBe(200);
      backend.open('retry-hold');
      await held;
      const rec = await recordOf(r2.logFile, 'after-retry');
      expect(rec.selected_pod).toBe('good');
      // The failed connect is request processing, not the answering pod's time. It lasted the
      // setting (the pools' clock ticks every 100 ms: up to 200 ms more), far from the default 5 s.
      expect(rec.duration_request_processing).toBeGreaterThan(rec.duration_upstream_processing);
      expect(rec.duration_request_processing).toBeGreaterThanOrEqual(700);
      expect(rec.duration_request_processing).toBeLessThan(4000);
    } finally {
      await r2.kill('SIGKILL');
      for (const s of fillers) s.destroy();
      stuck.kill();
    }
  }, 60_000);

  it('a pod that ends its streams with a count has long streams\' text estimated at its tokens per event, not read; one that stops is read again', async () => {
    // 3,000 events of two tokens each: about 180 K characters of event data, past the 64 K the
    // router keeps unparsed. Earlier streams of this pod ended without a count.
    const events = 3000;
    const threeTokens = { 'x-text': ' hello world again' };
    const body = chat('sf-model', { stream: true });
    const run = async (id: string, headers: Record<string, string>): Promise<{ answer: Answer; record: any }> => {
      const answer = await post(`${router.url}/v1/chat/completions`, body, { 'x-scenario': 'counted-sse', 'x-events': String(events), 'x-request-id': id, ...headers });
      return { answer, record: await recordOf(router.logFile, id) };
    };
    const first = await run('count-learned', { 'x-usage': 'yes' });
    expect(first.answer.error).toBeNull();
    expect(first.answer.body).not.toContain('"usage"'); // the count the router asked for is stripped
    expect(first.record.output_tokens).toBe(2 * events);
    const estimated = async (): Promise<number> =>
      sample(await (await fetch(`${router.url}/metrics`)).text(), `inference_router_output_tokens_estimated_total{route="${first.record.model_route}"}`) ?? 0;
    const estimatedBefore = await estimated();
    // The pod reports its count, two tokens an event: a stream of three-token events cut before
    // its count is estimated at two an event, its text unread.
    const cut = await run('count-cut', { 'x-cut': 'yes', ...threeTokens });
    expect(cut.answer.error).not.toBeNull();
    expect(cut.record.output_tokens).toBe(2 * events);
    // A stream that ends in full without the count is estimated too, and teaches the router...
    const stopped = await run('count-stopped', threeTokens);
    expect(stopped.answer.error).toBeNull();
    expect(stopped.record.output_tokens).toBe(2 * events);
    expect(await estimated() - estimatedBefore).toBe(4 * events); // both estimates, in the route's metric
    // ...so the next one is read and counted exactly.
    const read = await run('count-read', threeTokens);
    expect(read.record.output_tokens).toBe(3 * events);
  }, 60_000);
});

describe('the request target upstream (raw pod)', () => {
  it('a path and query with non-ASCII characters reach the pod as the client\'s UTF-8 bytes, never as control bytes that end the line', async () => {
    // A pod that keeps each request head's bytes (node:http refuses bytes above 0x7f in a target).
    const pod = await startHeadRecordingPod();
    const heads = pod.heads;
    const router = await startRouter(resourcesFor([{ name: 'raw-pod', port: pod.port }]), { workers: 1 });
    try {
      // U+0120, U+010D and U+010A end in the bytes of SP, CR and LF: narrowed to one byte each they
      // would end the request line and start headers of the client's making.
      const query = 'q=caf\u00e9\u2615&x=1\u0120HTTP/1.1\u010d\u010ax-injected:\u0120yes\u010d\u010ax-pad:\u0120';
      // The last target holds bytes that are not UTF-8: the server hands the path over as decoded
      // text, so each reaches the pod as U+FFFD (docs/configuration.md, HTTP limits).
      const invalid = Buffer.from('/v1/chat/completions?q=\xff\xfe&b=\xc3', 'latin1');
      for (const target of [`/v1/chat/completions?${query}`, `/v1/\u00fcber?${query}`, '/v1/\u00fcber\u010d\u010ax-injected:\u0120yes', invalid]) {
        const bytes = typeof target === 'string' ? Buffer.from(target, 'utf8') : target;
        const expected = typeof target === 'string' ? bytes : Buffer.from('/v1/chat/completions?q=\ufffd\ufffd&b=\ufffd', 'utf8');
        const body = chat();
        const raw = await rawRequest(router.url, Buffer.concat([Buffer.from('POST '), bytes, Buffer.from(` HTTP/1.1\r\nhost: ${new URL(router.url).host}\r\ncontent-type: application/json\r\n`
          + `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`)]));
        expect(raw).toMatch(/^HTTP\/1\.1 200 /);
        const head = heads.pop()!;
        const line = head.subarray(0, head.indexOf('\r\n'));
        expect(line.toString('hex')).toBe(Buffer.concat([Buffer.from('POST '), expected, Buffer.from(' HTTP/1.1')]).toString('hex'));
        expect(head.toString('latin1')).not.toMatch(/\r\nx-injected/);
      }
    } finally {
      await router.kill('SIGKILL');
      pod.close();
    }
  });
});

/** A request over a raw socket: every byte of the answer as it arrived, until the router closes. */
function rawPost(url: string, body: string, headers: Record<string, string>): { raw: () => string; closed: Promise<void> } {
  const u = new URL(url);
  let raw = '';
  const socket = connect(Number(u.port), u.hostname);
  socket.setEncoding('latin1');
  socket.on('data', (d: string) => { raw += d; });
  const head = Object.entries({ host: u.host, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...headers })
    .map(([k, v]) => `${k}: ${v}\r\n`).join('');
  socket.write(`POST ${u.pathname} HTTP/1.1\r\n${head}\r\n${body}`);
  const closed = new Promise<void>((r) => socket.on('close', () => r()));
  socket.on('error', () => {});
  return { raw: () => raw, closed };
}

/**
 * Strict HTTP/1.1 response decoding (as llhttp in strict mode): status line, headers, then a
 * chunked body where every chunk's data is followed by CRLF and the body ends with `0\r\n\r\n`.
 * Throws on any deviation; bytes after the answer must be none.
 */
function decodeStrict(raw: string): { status: number; headers: Map<string, string>; body: string } {
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) throw new Error(`no end of headers in ${JSON.stringify(raw.slice(0, 200))}`);
  const lines = raw.slice(0, end).split('\r\n');
  const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(lines[0])![1]);
  const headers = new Map<string, string>();
  for (const l of lines.slice(1)) {
    const i = l.indexOf(':');
    headers.set(l.slice(0, i).toLowerCase(), l.slice(i + 1).trim());
  }
  let pos = end + 4;
  let body = '';
  if (headers.get('transfer-encoding') !== 'chunked') throw new Error('expected a chunked answer');
  for (;;) {
    const lineEnd = raw.indexOf('\r\n', pos);
    const sizeText = raw.slice(pos, lineEnd);
    if (lineEnd < 0 || !/^[0-9a-fA-F]+$/.test(sizeText)) throw new Error(`bad chunk size ${JSON.stringify(raw.slice(pos, pos + 40))}`);
    const size = parseInt(sizeText, 16);
    pos = lineEnd + 2;
    if (size === 0) {
      if (raw.slice(pos, pos + 2) !== '\r\n') throw new Error(`bad end of body ${JSON.stringify(raw.slice(pos, pos + 40))}`);
      pos += 2;
      break;
    }
    body += raw.slice(pos, pos + size);
    pos += size;
    if (raw.slice(pos, pos + 2) !== '\r\n') throw new Error(`no CRLF after chunk data: ${JSON.stringify(raw.slice(pos, pos + 40))}`);
    pos += 2;
  }
  if (pos !== raw.length) throw new Error(`bytes after the answer: ${JSON.stringify(raw.slice(pos, pos + 40))}`);
  return { status, headers, body };
}

describe('SIGTERM while streams are in flight (strict framing)', () => {
  it('a stream that started before and one that starts during the drain both end cleanly', async () => {
    const backend = new Backend();
    await backend.start();
    const dir = tempDir();
    const router = await startRouter(resourcesFor([{ name: 'pod-a', port: backend.port }]), { dir, workers: 1, env: { ROUTER_DRAIN_TIMEOUT: '20s' } });
    try {
      const body = chat('sf-model', { stream: true });
      const started = rawPost(`${router.url}/v1/chat/completions`, body, { 'x-scenario': 'sse-slow', 'x-gate': 'g1' });
      const late = rawPost(`${router.url}/v1/chat/completions`, body, { 'x-scenario': 'sse-late', 'x-gate': 'g2' });
      await waitFor('first event of the started stream', () => started.raw().includes('first'));
      await waitFor('late request at the pod', () => backend.waiting.has('g2'));
      router.child.kill('SIGTERM');
      await new Promise((r) => setTimeout(r, 300)); // the drain has begun
      backend.open('g2');
      await waitFor('late stream to end', () => late.raw().includes('0\r\n\r\n'));
      backend.open('g1');
      expect(await router.exited).toBe(0);
      await Promise.all([started.closed, late.closed]);
      const a = decodeStrict(started.raw());
      const b = decodeStrict(late.raw());
      for (const x of [a, b]) {
        expect(x.status).toBe(200);
        expect(x.body).toContain('data: [DONE]');
      }
      expect(a.body).toContain('second');
      expect(b.body).toContain('late');
      // The stream that began during the drain announced the close with its headers.
      expect(b.headers.get('connection')).toBe('close');
    } finally {
      await router.kill('SIGKILL');
      await backend.stop();
    }
  }, 60_000);
});
