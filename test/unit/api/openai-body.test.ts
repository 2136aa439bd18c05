import { describe, expect, it } from 'vitest';
import { buildUpstreamBody } from '../../../src/api/openai-body.js';
import { parseRequest } from '../../../src/api/openai-request.js';

const build = (text: string, model: string | null = null) => {
  const raw = Buffer.from(text);
  return { raw, out: buildUpstreamBody(raw, parseRequest(raw, '/v1/chat/completions'), model) };
};
const MESSAGES = '[{"role":"user","content":"Grüße, \\u00e9 — 東京 \\ud83d\\ude00"}]';

describe('buildUpstreamBody', () => {
  it('passes a non-stream body and a stream that asked for usage itself unchanged (the same buffer)', () => {
    for (const text of [`{"model":"m","messages":${MESSAGES}}`, `{"model":"m","messages":${MESSAGES},"stream":true,"stream_options":{"include_usage":true}}`]) {
      const { raw, out } = build(text);
      expect(out.body).toBe(raw);
      expect(out.stripUsage).toBe(false);
    }
  });

  it('splices include_usage after the opening brace of a stream without stream_options, the client\'s bytes otherwise unchanged', () => {
    for (const lead of ['', ' \n\t\r ']) {
      const text = `${lead}{"model":"m","stream":true,"messages":${MESSAGES},"temperature":0}`;
      const { out } = build(text);
      expect(out.stripUsage).toBe(true);
      expect(out.body.toString()).toBe(`${lead}{"stream_options":{"include_usage":true},"model":"m","stream":true,"messages":${MESSAGES},"temperature":0}`);
      expect(JSON.parse(out.body.toString())).toEqual({ ...JSON.parse(text), stream_options: { include_usage: true } });
    }
  });

  it('merges include_usage into the client\'s own stream_options (other members kept) and serializes again', () => {
    for (const opts of ['{"continuous_usage_stats":true}', '{"include_usage":false}', 'null']) {
      const { out } = build(`{"model":"m","stream":true,"messages":${MESSAGES},"stream_options":${opts}}`);
      const sent = JSON.parse(out.body.toString());
      expect(sent.stream_options).toEqual({ ...(JSON.parse(opts) ?? {}), include_usage: true });
      expect(sent.messages).toEqual(JSON.parse(MESSAGES));
      expect(out.stripUsage).toBe(true);
    }
  });

  it('rewrites model (and adds include_usage to a stream) when the ModelServer names another model', () => {
    const plain = build(`{"model":"m","messages":${MESSAGES}}`, 'served');
    expect(JSON.parse(plain.out.body.toString())).toEqual({ model: 'served', messages: JSON.parse(MESSAGES) });
    expect(plain.out.stripUsage).toBe(false);
    const stream = build(`{"model":"m","stream":true,"messages":${MESSAGES}}`, 'served');
    expect(JSON.parse(stream.out.body.toString())).toEqual({ model: 'served', stream: true, messages: JSON.parse(MESSAGES), stream_options: { include_usage: true } });
    const same = build(`{"model":"m","messages":${MESSAGES}}`, 'm');
    expect(same.out.body).toBe(same.raw);
  });

  it('a rewritten model or merged stream_options changes only those members: integers beyond 2^53, number spellings and the rest of the bytes stay as the client sent them', () => {
    const rest = '"seed":9223372036854775807,"temperature":1.0,"top_p":1e-1,"logit_bias":{"12":-100}';
    const plain = build(`{"model":"m","messages":${MESSAGES},${rest}}`, 'served');
    expect(plain.out.body.toString()).toBe(`{"model":"served","messages":${MESSAGES},${rest}}`);
    const spaced = build(` {\n "messages" : ${MESSAGES} ,\n "model" : "m" , ${rest} }`, 'sérved "x"');
    expect(spaced.out.body.toString()).toBe(` {\n "messages" : ${MESSAGES} ,\n "model" : "sérved \\"x\\"" , ${rest} }`);
    expect(JSON.parse(spaced.out.body.toString()).model).toBe('sérved "x"');
    // A stream without stream_options: the member spliced in, model replaced.
    const stream = build(`{"model":"m","stream":true,"messages":${MESSAGES},${rest}}`, 'served');
    expect(stream.out.body.toString()).toBe(`{"stream_options":{"include_usage":true},"model":"served","stream":true,"messages":${MESSAGES},${rest}}`);
    expect(stream.out.stripUsage).toBe(true);
    // The client's own stream_options: merged in its place, model as sent.
    const merged = build(`{"model":"m","stream":true,"stream_options":{"continuous_usage_stats":true},"messages":${MESSAGES},${rest}}`);
    expect(merged.out.body.toString()).toBe(`{"model":"m","stream":true,"stream_options":{"continuous_usage_stats":true,"include_usage":true},"messages":${MESSAGES},${rest}}`);
    expect(merged.out.stripUsage).toBe(true);
    // Both, with the members the other way round.
    const both = build(`{"stream_options":null,"seed":18446744073709551615,"stream":true,"model":"m","messages":${MESSAGES}}`, 'served');
    expect(both.out.body.toString()).toBe(`{"stream_options":{"include_usage":true},"seed":18446744073709551615,"stream":true,"model":"served","messages":${MESSAGES}}`);
  });

  it('a body naming model or stream_options twice is serialized again (one member each, the value JSON.parse read)', () => {
    const { out } = build(`{"model":"x","model":"m","messages":${MESSAGES}}`, 'served');
    expect(JSON.parse(out.body.toString())).toEqual({ model: 'served', messages: JSON.parse(MESSAGES) });
    expect(out.body.toString().match(/"model"/g)?.length).toBe(1);
    const opts = build(`{"model":"m","stream":true,"stream_options":{"include_usage":true},"stream_options":{"x":1},"messages":${MESSAGES}}`);
    expect(JSON.parse(opts.out.body.toString()).stream_options).toEqual({ x: 1, include_usage: true });
    expect(opts.out.body.toString().match(/"stream_options"/g)?.length).toBe(1);
    const keyEscaped = build(`{"mod\\u0065l":"m","messages":${MESSAGES},"model":"m"}`, 'served');
    expect(JSON.parse(keyEscaped.out.body.toString())).toEqual({ model: 'served', messages: JSON.parse(MESSAGES) });
    expect(keyEscaped.out.body.toString().match(/"model"/g)?.length).toBe(1);
    // The escaped spelling is the same member: not left behind for a pod that keeps the first.
    expect(keyEscaped.out.body.toString()).not.toContain('mod\\u0065l');
  });
});
