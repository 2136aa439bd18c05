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
});
