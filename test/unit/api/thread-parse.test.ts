import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { apiFor } from '../../../src/api/api-registry.js';
import type { InferenceRequest } from '../../../src/api/inference-api.js';
import type { ParsedRequest } from '../../../src/api/openai-request.js';
import { ThreadParser, type ThreadParsed } from '../../../src/api/thread-parse.js';
import { RouterError } from '../../../src/errors.js';
import { TokenizerPool, type TokenizerThreadData } from '../../../src/tokens/tokenizer-pool.js';
import { rankTableWorkerData } from '../../../src/tokens/o200k-ranks.js';
import { compiledParseTaskFile, compiledTaskFile, removeCompiled } from '../tokens/compiled-task.js';
import { dataUrl, png, wav } from '../../helpers/media-fixtures.js';

let countFile = '';
let parseFile = '';
const pools: TokenizerPool[] = [];

beforeAll(() => {
  countFile = compiledTaskFile();
  parseFile = compiledParseTaskFile();
});
afterEach(async () => { await Promise.all(pools.splice(0).map((p) => p.close())); });
afterAll(removeCompiled);

async function parser(minBytes = 1, taskFile = parseFile, queue = 4, workerData?: TokenizerThreadData): Promise<ThreadParser> {
  const pool = new TokenizerPool({ filename: countFile, size: 1, queue, budgetMs: 10_000, workerData });
  pools.push(pool);
  await pool.ready();
  return new ThreadParser(pool, minBytes, taskFile);
}

const CHAT = '/v1/chat/completions';

/** What the event loop makes of `raw`: the request (or its refusal) and the prompt. */
function onEventLoop(raw: Buffer, url: string): ThreadParsed | RouterError {
  const api = apiFor(url);
  try {
    const req = api.parse(raw, url);
    return { req, prompt: api.promptText(req) };
  } catch (err) {
    return err as RouterError;
  }
}

function fields(req: InferenceRequest): Record<string, unknown> {
  const r = req as ParsedRequest;
  return { model: r.model, api: r.api, stream: r.stream, clientAskedUsage: r.clientAskedUsage, streamOptions: r.streamOptions };
}

const BODIES: [string, string, unknown][] = [
  ['a chat with an image, a recording and text', CHAT, {
    model: 'vision', stream: true, stream_options: { include_usage: false, continuous_usage_stats: true },
    messages: [
      { role: 'system', content: 'Describe what you are shown. '.repeat(40) },
      { role: 'user', name: 'ana', content: [
        { type: 'text', text: 'What is in this picture, and what is said?' },
        { type: 'image_url', image_url: { url: dataUrl('image/png', png(1024, 768, 300_000)), detail: 'high' } },
        { type: 'input_audio', input_audio: { data: wav(3).toString('base64'), format: 'wav' } },
      ] },
    ],
    tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }],
  }],
  ['a completion of token ids and text', '/v1/completions', { model: 'base', prompt: ['Once upon a time', [1, 2, 3, 4]], max_tokens: 7 }],
  ['a Responses request', '/v1/responses', { model: 'r', instructions: 'Be terse. '.repeat(100), input: [{ role: 'user', content: 'Hello there' }] }],
  ['a stream whose client asked for usage', CHAT, { model: 'm', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] }],
];

describe('large bodies parsed in a tokenizer thread', () => {
  it.each(BODIES)('%s: the same request fields and prompt as on the event loop; the body itself read again only when asked', async (_name, url, body) => {
    const raw = Buffer.from(JSON.stringify(body));
    const p = await parser();
    expect(p.wants(raw)).toBe(true);
    const got = await p.parse(apiFor(url), raw, url);
    const want = onEventLoop(raw, url) as ThreadParsed;
    if (got === null || got instanceof RouterError) throw new Error(`expected a parsed request, got ${String(got)}`);
    expect(fields(got.req)).toEqual(fields(want.req));
    expect(got.prompt).toEqual(want.prompt);
    expect(got.req.body).toEqual(body);
    expect(got.req.body).toBe(got.req.body); // parsed once
    expect(p.stats).toEqual({ inThread: 1, onEventLoop: 0 });
  });

  it('parses a body in shared memory (as the front reads a large one) where it lies, the same as a copy', async () => {
    const text = JSON.stringify(BODIES[0][2]);
    const shared = Buffer.from(new SharedArrayBuffer(Buffer.byteLength(text) + 10), 5, Buffer.byteLength(text));
    shared.write(text);
    const p = await parser();
    const got = await p.parse(apiFor(CHAT), shared, CHAT) as ThreadParsed;
    const want = onEventLoop(Buffer.from(text), CHAT) as ThreadParsed;
    expect(fields(got.req)).toEqual(fields(want.req));
    expect(got.prompt).toEqual(want.prompt);
    expect(got.req.body).toEqual(BODIES[0][2]);
  });

  it('the image and the recording are counted from the thread as on the event loop', async () => {
    const raw = Buffer.from(JSON.stringify(BODIES[0][2]));
    const got = await (await parser()).parse(apiFor(CHAT), raw, CHAT) as ThreadParsed;
    // 1024x768 at high detail and 3 s of audio: far more than the texts' characters would make.
    expect(got.prompt.knownTokens).toBeGreaterThan(500);
    expect(got.prompt.knownTokens).toBe((onEventLoop(raw, CHAT) as ThreadParsed).prompt.knownTokens);
  });

  it.each([
    ['not JSON', '{"model": "m", "messages": [', CHAT],
    ['a form', 'model=m&prompt=hello', '/v1/completions'],
    ['an array', '[1, 2, 3]', CHAT],
    ['no model', '{"messages": [{"role": "user", "content": "hi"}]}', CHAT],
    ['no messages', '{"model": "m"}', CHAT],
    ['no prompt', '{"model": "m"}', '/v1/completions'],
    ['nested too deep', `{"model": "m", "messages": ${'['.repeat(600)}${']'.repeat(600)}}`, CHAT],
  ])('%s: refused with the error the event loop gives', async (_name, text, url) => {
    const raw = Buffer.from(text);
    const got = await (await parser()).parse(apiFor(url), raw, url);
    const want = onEventLoop(raw, url);
    expect(want).toBeInstanceOf(RouterError);
    expect(got).toBeInstanceOf(RouterError);
    const e = got as RouterError;
    const w = want as RouterError;
    expect({ type: e.type, message: e.message, status: e.status, code: e.code, headers: e.headers })
      .toEqual({ type: w.type, message: w.message, status: w.status, code: w.code, headers: w.headers });
  });

  it('takes only bodies of minBytes or more', async () => {
    const p = await parser(1000);
    expect(p.wants(Buffer.alloc(999))).toBe(false);
    expect(p.wants(Buffer.alloc(1000))).toBe(true);
    expect(p.stats).toEqual({ inThread: 0, onEventLoop: 0 });
  });

  it('leaves a body to the event loop, counted, when every place of the pool is taken', async () => {
    const p = await parser(1, parseFile, 1);
    const raw = Buffer.from(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x'.repeat(100_000) }] }));
    const inFlight = [p.parse(apiFor(CHAT), raw, CHAT), p.parse(apiFor(CHAT), raw, CHAT)]; // the thread's place and the queue's
    expect(p.wants(raw)).toBe(false);
    expect(p.stats.onEventLoop).toBe(1);
    for (const got of await Promise.all(inFlight)) expect((got as ThreadParsed).req.model).toBe('m');
    expect(p.wants(raw)).toBe(true);
    expect(p.stats).toEqual({ inThread: 2, onEventLoop: 1 });
  });

  it('answers null, counted, when the thread fails (the event loop then parses the body)', async () => {
    const p = await parser(1, `${parseFile}.missing.js`);
    const raw = Buffer.from('{"model":"m","messages":[{"role":"user","content":"hi"}]}');
    expect(await p.parse(apiFor(CHAT), raw, CHAT)).toBeNull();
    expect(p.stats).toEqual({ inThread: 0, onEventLoop: 1 });
  });

  it('the body upstream is the same bytes as from a request parsed on the event loop', async () => {
    const p = await parser();
    const api = apiFor(CHAT);
    const texts = [
      '{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}',
      '{"model":"m","stream":true,"stream_options":{"continuous_usage_stats":true},"messages":[{"role":"user","content":"hi"}],"seed":9223372036854775807}',
      // Named twice: serialized again from the whole body, which the request parses again from its bytes.
      '{"model":"a","model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}',
    ];
    for (const text of texts) {
      const raw = Buffer.from(text);
      const got = await p.parse(api, raw, CHAT) as ThreadParsed;
      const want = onEventLoop(raw, CHAT) as ThreadParsed;
      for (const model of [null, 'm', 'served-as']) {
        const a = api.upstreamBody(raw, got.req, model);
        const b = api.upstreamBody(raw, want.req, model);
        expect(a.body.toString()).toBe(b.body.toString());
        expect(a.stripUsage).toBe(b.stripUsage);
      }
    }
  });

  it('refuses a size below 1', () => {
    const pool = { full: false } as unknown as TokenizerPool;
    expect(() => new ThreadParser(pool, 0)).toThrow(/integer >= 1; got 0/);
  });

  it.each([
    ['without the setting handed: kept, as by default', undefined, [false, true, true]],
    ['with 24 MiB handed', 24 * 1024 * 1024, [false, true, true]],
    ['with none handed (ROUTER_TOKENIZER_CONVERSATION_BYTES=0)', 0, [false, false, false]],
  ])('a long conversation is kept by the thread %s', async (_name, conversationBytes, found) => {
    const p = await parser(1, parseFile, 4, conversationBytes === undefined ? undefined : { ...rankTableWorkerData(), conversationBytes });
    const messages: { role: string; content: string }[] = [{ role: 'system', content: 'Rules. '.repeat(2000) }, { role: 'user', content: 'hello' }, { role: 'assistant', content: 'hi' }];
    const kept: boolean[] = [];
    for (let turn = 0; turn < 3; turn++) {
      messages.push({ role: 'user', content: `question ${turn}` });
      const raw = Buffer.from(JSON.stringify({ model: 'm', messages }));
      const got = await p.parse(apiFor(CHAT), raw, CHAT) as ThreadParsed;
      expect(got.prompt.texts).toEqual((onEventLoop(raw, CHAT) as ThreadParsed).prompt.texts);
      // A body that went on from a kept conversation comes with that conversation's count to keep.
      kept.push(got.prompt.keep !== null);
      messages.push({ role: 'assistant', content: `answer ${turn}` });
    }
    expect(kept).toEqual(found);
  });
});
