import { createServer, request, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accessLogRecords, listenLocal, resourcesFor, startLoggedRouter, waitFor, type Router } from '../helpers/processes.js';
import { sample } from '../helpers/metrics-text.js';
import { dataUrl, png } from '../helpers/media-fixtures.js';

/**
 * Bodies of ROUTER_TOKENIZER_PARSE_MIN_BYTES or more are parsed in a tokenizer thread. Two built
 * routers in front of one pod: one parses every body of 64 KiB or more in a thread, the other
 * every body on its event loop. The same requests must reach the pod as the same bytes, be
 * answered alike, and be logged with the same input tokens.
 */

const MIN_BYTES = 65_536;
const picture = dataUrl('image/png', png(800, 600, 200_000));
const longText = 'The archive holds letters, ledgers and maps from three centuries. '.repeat(2_000);

/** `chunked`: sent without a content-length, in pieces (the router cannot read it into shared memory as it arrives). */
interface Case { name: string; path: string; body: string; chunked?: boolean }
const CASES: Case[] = [
  { name: 'a picture to describe', path: '/v1/chat/completions', body: JSON.stringify({
    model: 'sf-model', messages: [{ role: 'user', content: [{ type: 'text', text: 'What is shown?' }, { type: 'image_url', image_url: { url: picture } }] }],
  }) },
  { name: 'a long document, streamed (include_usage spliced in)', path: '/v1/chat/completions', body: JSON.stringify({
    model: 'sf-model', stream: true, messages: [{ role: 'system', content: 'Summarize.' }, { role: 'user', content: longText }],
  }) },
  { name: 'a stream with stream_options of its own and a large seed', path: '/v1/chat/completions',
    body: `{"model":"sf-model","stream":true,"stream_options":{"continuous_usage_stats":true},"seed":9223372036854775807,"messages":[{"role":"user","content":${JSON.stringify(longText)}}]}` },
  { name: 'a completion naming its model twice', path: '/v1/completions', body: `{"model":"other","model":"sf-model","prompt":${JSON.stringify(longText)}}` },
  { name: 'a long document sent chunked', path: '/v1/chat/completions', chunked: true, body: JSON.stringify({
    model: 'sf-model', messages: [{ role: 'user', content: `${longText} Which centuries?` }],
  }) },
  { name: 'a small chat (below the size)', path: '/v1/chat/completions', body: JSON.stringify({ model: 'sf-model', messages: [{ role: 'user', content: 'hi' }] }) },
];
const REFUSED: Case[] = [
  { name: 'broken JSON', path: '/v1/chat/completions', body: `{"model":"sf-model","messages":[{"role":"user","content":${JSON.stringify(longText)}}` },
  { name: 'no messages', path: '/v1/chat/completions', body: JSON.stringify({ model: 'sf-model', input: longText }) },
  { name: 'an unknown model', path: '/v1/chat/completions', body: JSON.stringify({ model: 'nobody', messages: [{ role: 'user', content: longText }] }) },
];

/** A pod that keeps every body it is sent and answers with no usage (so the router's own count is logged). */
function startPod(received: string[]): Promise<Server> {
  const pod = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      received.push(body);
      if (JSON.parse(body).stream === true) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end('data: {"choices":[{"index":0,"delta":{"content":"A summary."}}]}\n\ndata: [DONE]\n\n');
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"choices":[{"index":0,"message":{"role":"assistant","content":"A picture."}}]}');
      }
    });
  });
  return listenLocal(pod).then(() => pod);
}

interface Side { router: Router; logFile: string; received: string[]; pod: Server }

async function startSide(parseMinBytes: number): Promise<Side> {
  const received: string[] = [];
  const pod = await startPod(received);
  const port = (pod.address() as { port: number }).port;
  const router = await startLoggedRouter(resourcesFor([{ name: 'pod-a', port }], { serverModel: 'served-model' }), {
    env: { ROUTER_TOKENIZER_PARSE_MIN_BYTES: String(parseMinBytes) },
  });
  return { router, logFile: router.logFile, received, pod };
}

async function send(side: Side, c: Case): Promise<{ status: number; text: string }> {
  if (c.chunked === true) {
    const u = new URL(`${side.router.url}${c.path}`);
    return new Promise((resolve, reject) => {
      const req = request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } }, (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (d: string) => { text += d; }).on('end', () => resolve({ status: res.statusCode!, text }));
      });
      req.on('error', reject);
      const half = Math.floor(c.body.length / 2);
      req.write(c.body.slice(0, half));
      setTimeout(() => req.end(c.body.slice(half)), 20);
    });
  }
  const r = await fetch(`${side.router.url}${c.path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: c.body });
  return { status: r.status, text: await r.text() };
}

describe('large request bodies parsed in a tokenizer thread (built router, real pod)', () => {
  let inThread: Side;
  let onLoop: Side;

  beforeAll(async () => {
    inThread = await startSide(MIN_BYTES);
    onLoop = await startSide(0);
  });
  afterAll(async () => {
    for (const s of [inThread, onLoop]) {
      await s?.router.kill();
      s?.pod.close();
    }
  });

  it('sends the pod the same bytes, answers and logs alike, and counts where each large body was parsed', async () => {
    const all = [...CASES, ...REFUSED];
    for (const c of all) {
      const a = await send(inThread, c);
      const b = await send(onLoop, c);
      expect({ case: c.name, status: a.status }).toEqual({ case: c.name, status: b.status });
      expect(a.text).toBe(b.text);
    }
    expect(inThread.received.length).toBe(CASES.length);
    expect(inThread.received).toEqual(onLoop.received);
    // The model was rewritten and, in the streams, include_usage asked for.
    expect(JSON.parse(inThread.received[1]).stream_options).toEqual({ include_usage: true });
    expect(JSON.parse(inThread.received[2]).stream_options).toEqual({ continuous_usage_stats: true, include_usage: true });
    expect(inThread.received[2]).toContain('9223372036854775807');
    expect(JSON.parse(inThread.received[3]).model).toBe('served-model');

    const logged = async (s: Side): Promise<unknown[]> => {
      const recs = await waitFor('access-log records', () => {
        const r = accessLogRecords(s.logFile);
        return r.length >= all.length ? r : null;
      });
      return recs.map((r) => ({ status: r.status, input: r.input_tokens, error: r.error_type ?? null, message: r.error_message ?? null }));
    };
    const a = await logged(inThread);
    expect(a).toEqual(await logged(onLoop));
    // The picture counts as an image, not as its base64 characters; the long document as its text.
    const inputs = a.map((r) => (r as { input: number }).input);
    expect(inputs[0]).toBeGreaterThan(100);
    expect(inputs[0]).toBeLessThan(picture.length / 20);
    expect(inputs[1]).toBeGreaterThan(longText.length / 8);

    const metrics = await (await fetch(`${inThread.router.url}/metrics`)).text();
    const large = all.filter((c) => Buffer.byteLength(c.body) >= MIN_BYTES).length;
    expect(large).toBe(all.length - 1);
    expect(sample(metrics, 'inference_router_large_body_parses_total{where="thread"}')).toBe(large);
    expect(sample(metrics, 'inference_router_large_body_parses_total{where="event_loop"}')).toBe(0);
    const off = await (await fetch(`${onLoop.router.url}/metrics`)).text();
    expect(off).not.toContain('inference_router_large_body_parses_total{');
  });
});
