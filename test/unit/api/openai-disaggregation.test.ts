import { describe, expect, it } from 'vitest';
import { openAiDisaggregation as pd } from '../../../src/api/openai-disaggregation.js';
import { rewriteMembers } from '../../../src/api/json-members.js';
import { parseRequest } from '../../../src/api/openai-request.js';
import { apiFor } from '../../../src/api/api-registry.js';

const CHAT = '/v1/chat/completions';
const req = (text: string, url = CHAT) => {
  const raw = Buffer.from(text);
  return { raw, req: parseRequest(raw, url) };
};
const json = (b: Buffer) => JSON.parse(b.toString()) as Record<string, unknown>;
const MESSAGES = '[{"role":"user","content":"Grüße — 東京"}]';
const BIG_SEED = '9223372036854775807';

describe('prefill body (kthena connectors: http, lmcache; nixl, mooncake with kv_transfer_params)', () => {
  it('http: a stream loses stream and stream_options, max_tokens becomes 1; other members keep their bytes', () => {
    const { raw, req: r } = req(`{"model":"m","stream":true,"stream_options":{"include_usage":false},"messages":${MESSAGES},"max_tokens":200,"seed":${BIG_SEED}}`);
    const body = pd.prefillBody(raw, r, null, false);
    expect(body.toString()).toBe(`{"model":"m","messages":${MESSAGES},"max_tokens":1,"seed":${BIG_SEED}}`);
  });

  it('adds max_tokens 1 when absent; max_completion_tokens is set to 1 only when the client set it (not null)', () => {
    const a = req(`{"model":"m","messages":${MESSAGES}}`);
    expect(json(pd.prefillBody(a.raw, a.req, null, false))).toEqual({ model: 'm', messages: JSON.parse(MESSAGES), max_tokens: 1 });
    const b = req(`{"model":"m","messages":${MESSAGES},"max_completion_tokens":50}`);
    expect(json(pd.prefillBody(b.raw, b.req, null, false))).toEqual({ model: 'm', messages: JSON.parse(MESSAGES), max_completion_tokens: 1, max_tokens: 1 });
    const c = req(`{"model":"m","messages":${MESSAGES},"max_completion_tokens":null}`);
    expect(json(pd.prefillBody(c.raw, c.req, null, false))).toEqual({ model: 'm', messages: JSON.parse(MESSAGES), max_completion_tokens: null, max_tokens: 1 });
  });

  it('nixl/mooncake: asks for a remote decode in kv_transfer_params, replacing the client\'s own', () => {
    const { raw, req: r } = req(`{"model":"m","kv_transfer_params":{"x":1},"prompt":"hi","stream":false}`, '/v1/completions');
    expect(json(pd.prefillBody(raw, r, null, true))).toEqual({
      model: 'm', prompt: 'hi', max_tokens: 1, kv_transfer_params: { do_remote_decode: true, do_remote_prefill: false },
    });
  });

  it('rewrites model as for any pod (ModelServer spec.model)', () => {
    const { raw, req: r } = req(`{"model":"alias","prompt":"hi"}`, '/v1/completions');
    expect(json(pd.prefillBody(raw, r, 'org/Real-Model', false))).toEqual({ model: 'org/Real-Model', prompt: 'hi', max_tokens: 1 });
  });
});

describe('SGLang bodies (kthena\'s sglang connector: bootstrap room and host)', () => {
  const ROOM = '9223372036854775806';

  it('prefill: the prefill changes with bootstrap_room written as a JSON integer of all its digits (above 2^53), no kv_transfer_params', () => {
    const { raw, req: r } = req(`{"model":"alias","stream":true,"messages":${MESSAGES},"max_tokens":200,"max_completion_tokens":9,"bootstrap_room":5,"seed":${BIG_SEED}}`);
    const body = pd.sglangPrefillBody(raw, r, 'org/Real', ROOM).toString();
    expect(body).toContain(`"bootstrap_room":${ROOM}`);
    expect(body).toContain(`"seed":${BIG_SEED}`);
    expect(JSON.parse(body)).toEqual({ model: 'org/Real', messages: JSON.parse(MESSAGES), max_tokens: 1, max_completion_tokens: 1, bootstrap_room: Number(ROOM), seed: Number(BIG_SEED) });
  });

  it('decode: the body any pod gets with the same bootstrap_room and bootstrap_host (no port), stream and max_tokens kept', () => {
    const { raw, req: r } = req(`{"model":"m","stream":true,"messages":${MESSAGES},"max_tokens":20,"bootstrap_host":"old"}`);
    const up = pd.sglangDecodeBody(raw, r, null, ROOM, '10.0.0.7');
    expect(up.stripUsage).toBe(true);
    expect(up.body.toString()).toContain(`"bootstrap_room":${ROOM}`);
    expect(json(up.body)).toEqual({
      model: 'm', stream: true, stream_options: { include_usage: true }, messages: JSON.parse(MESSAGES), max_tokens: 20, bootstrap_host: '10.0.0.7', bootstrap_room: Number(ROOM),
    });
    const v6 = req(`{"model":"m","prompt":"hi"}`, '/v1/completions');
    expect(json(pd.sglangDecodeBody(v6.raw, v6.req, null, '0', 'fd00::1').body)).toEqual({ model: 'm', prompt: 'hi', bootstrap_room: 0, bootstrap_host: 'fd00::1' });
  });
});

describe('decode body', () => {
  it('http: the body any pod gets (a stream asks for its usage)', () => {
    const { raw, req: r } = req(`{"model":"m","stream":true,"messages":${MESSAGES},"max_tokens":20}`);
    const up = pd.decodeBody(raw, r, null, null);
    expect(up.stripUsage).toBe(true);
    expect(json(up.body)).toEqual({ model: 'm', stream: true, stream_options: { include_usage: true }, messages: JSON.parse(MESSAGES), max_tokens: 20 });
    const plain = req(`{"model":"m","messages":${MESSAGES}}`);
    expect(pd.decodeBody(plain.raw, plain.req, null, null).body).toBe(plain.raw);
  });

  it('nixl: carries the prefill answer\'s kv_transfer_params, the client\'s max_tokens and stream kept', () => {
    const { raw, req: r } = req(`{"model":"m","stream":true,"messages":${MESSAGES},"max_tokens":20,"kv_transfer_params":{"old":true},"seed":${BIG_SEED}}`);
    const params = Buffer.from('{"do_remote_prefill":true,"do_remote_decode":false,"remote_block_ids":[1,2],"remote_engine_id":"e","remote_host":"10.0.0.1","remote_port":5600}');
    const up = pd.decodeBody(raw, r, null, params);
    expect(up.stripUsage).toBe(true);
    expect(up.body.toString()).toContain(`"seed":${BIG_SEED}`);
    expect(json(up.body)).toMatchObject({ stream: true, max_tokens: 20, stream_options: { include_usage: true }, kv_transfer_params: JSON.parse(params.toString()) });
  });
});

describe('kvTransferParams of a prefill answer', () => {
  it('is the member as JSON, null when the answer has none, and null (not JSON) for a body that is no JSON object', () => {
    expect(pd.kvTransferParams(Buffer.from('{"id":"x","kv_transfer_params":{"remote_block_ids":[3]},"choices":[]}'))!.toString()).toBe('{"remote_block_ids":[3]}');
    expect(pd.kvTransferParams(Buffer.from('{"id":"x"}'))!.toString()).toBe('null');
    expect(pd.kvTransferParams(Buffer.from('not json'))).toBeNull();
    expect(pd.kvTransferParams(Buffer.from('[1]'))).toBeNull();
  });
});

describe('which requests split', () => {
  it('completions and chat do; embeddings and the Responses API do not', () => {
    expect(pd.supports(req('{"model":"m","prompt":"x"}', '/v1/completions').req)).toBe(true);
    expect(pd.supports(req(`{"model":"m","messages":${MESSAGES}}`).req)).toBe(true);
    expect(pd.supports(req('{"model":"m","input":"x"}', '/v1/embeddings').req)).toBe(false);
    expect(apiFor('/v1/responses').disaggregation).toBeNull();
  });
});

describe('rewriteMembers', () => {
  it('handles white space, escaped names, duplicates and an object left empty', () => {
    expect(rewriteMembers(Buffer.from(' { "a" : 1 , "b":[1,{"c":"}"}] ,"a":2 } '), [{ name: 'a', value: null }]).toString()).toBe('{"b":[1,{"c":"}"}]}');
    expect(rewriteMembers(Buffer.from('{"str\\u0065am":true,"x":"y"}'), [{ name: 'stream', value: null }]).toString()).toBe('{"x":"y"}');
    expect(rewriteMembers(Buffer.from('{"stream":true}'), [{ name: 'stream', value: null }]).toString()).toBe('{}');
    expect(rewriteMembers(Buffer.from('{}'), [{ name: 'max_tokens', value: Buffer.from('1') }]).toString()).toBe('{"max_tokens":1}');
  });

  it('gives what JSON.parse reads of the object changed alike, over varied bodies and spacing', () => {
    let seed = 20261204;
    const next = () => ((seed = (seed * 1664525 + 1013904223) >>> 0) / 2 ** 32);
    const VALUES = [1, -2.5e3, 'x', 'q"\\}{,', true, null, [1, { a: '}' }], { s: 'a,b', n: [null] }, '東京'];
    const NAMES = ['stream', 'max_tokens', 'stream_options', 'kv_transfer_params', 'model', 'prompt', 'n', 'max_completion_tokens'];
    for (let i = 0; i < 500; i++) {
      const obj: Record<string, unknown> = {};
      for (const name of NAMES) if (next() < 0.5) obj[name] = VALUES[Math.floor(next() * VALUES.length)];
      const sp = () => [' ', '', '\n\t', '  '][Math.floor(next() * 4)];
      const raw = Buffer.from(`${sp()}{${sp()}${Object.entries(obj).map(([k, v]) => `${JSON.stringify(k)}${sp()}:${sp()}${JSON.stringify(v)}`).join(`${sp()},${sp()}`)}${sp()}}${sp()}`);
      const out = JSON.parse(rewriteMembers(raw, [
        { name: 'stream', value: null }, { name: 'max_tokens', value: Buffer.from('1') },
        { name: 'max_completion_tokens', value: Buffer.from('1'), ifPresent: true }, { name: 'kv_transfer_params', value: Buffer.from('{"k":[2]}') },
      ]).toString());
      const want: Record<string, unknown> = { ...obj, max_tokens: 1, kv_transfer_params: { k: [2] } };
      delete want.stream;
      if (obj.max_completion_tokens !== undefined && obj.max_completion_tokens !== null) want.max_completion_tokens = 1;
      expect(out).toEqual(want);
    }
  });
});
