import { describe, expect, it } from 'vitest';
import { apiFor } from '../../../src/api/api-registry.js';
import { GeneratedTextRecorder as Recorder } from '../../helpers/generated-text-recorder.js';
import { HELD_EVENT_CHARS } from '../../../src/api/openai-sse-usage.js';

// Everything goes through the API the router picks for the path, as the pipeline asks it.
const api = apiFor('/v1/responses');

const USAGE = {
  input_tokens: 36,
  input_tokens_details: { cached_tokens: 0 },
  output_tokens: 87,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: 123,
};
// Text that looks like what the router reads, to show it is read as text only.
const WORDS = ['Grüße', ' 🙂 naïve', ' "usage":{"output_tokens":999}', ' end\n'];
const TEXT = WORDS.join('');

function message(text: string): Record<string, unknown> {
  return { id: 'msg_1', type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] };
}

/** A Responses object in OpenAI's member order: `usage` is followed by `user` and `metadata`. */
function response(status: string, usage: unknown, output: unknown[]): Record<string, unknown> {
  return {
    id: 'resp_1', object: 'response', created_at: 1741476542, status, error: null, incomplete_details: null,
    instructions: null, max_output_tokens: null, model: 'gpt-4.1-2025-04-14', output, parallel_tool_calls: true,
    previous_response_id: null, reasoning: { effort: null, summary: null }, store: true, temperature: 1,
    text: { format: { type: 'text' } }, tool_choice: 'auto', tools: [], top_p: 1, truncation: 'disabled',
    usage, user: null, metadata: {},
  };
}

/** The events of a streamed answer in OpenAI's documented order, each `event:` + `data:` lines. */
function streamEvents(final: { type: string; usage: unknown } | null): string[] {
  let seq = 0;
  const ev = (o: Record<string, unknown>): string => `event: ${String(o.type)}\ndata: ${JSON.stringify({ ...o, sequence_number: seq++ })}\n\n`;
  const part = { type: 'output_text', text: '', annotations: [] };
  const where = { item_id: 'msg_1', output_index: 0, content_index: 0 };
  const events = [
    ev({ type: 'response.created', response: response('in_progress', null, []) }),
    ev({ type: 'response.in_progress', response: response('in_progress', null, []) }),
    ev({ type: 'response.output_item.added', output_index: 0, item: { ...message(''), status: 'in_progress', content: [] } }),
    ev({ type: 'response.content_part.added', ...where, part }),
    ...WORDS.map((delta) => ev({ type: 'response.output_text.delta', ...where, delta, logprobs: [] })),
    ev({ type: 'response.output_text.done', ...where, text: TEXT, logprobs: [] }),
    ev({ type: 'response.content_part.done', ...where, part: { ...part, text: TEXT } }),
    ev({ type: 'response.output_item.done', output_index: 0, item: message(TEXT) }),
  ];
  if (final !== null) {
    const status = final.type.slice('response.'.length);
    events.push(ev({ type: final.type, response: response(status, final.usage, [message(TEXT)]) }));
  }
  return events;
}

function feed(bytes: Buffer, cuts: number[], end: boolean, tokensPerEvent: number | null = null) {
  const rec = new Recorder();
  const reader = api.streamUsage(true, rec, tokensPerEvent, 0);
  const parts: Buffer[] = [];
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    const chunk = Buffer.from(bytes.subarray(from, cut));
    const out = reader.push(chunk);
    expect(out).toBe(chunk); // nothing is held back or stripped
    parts.push(Buffer.from(out));
    chunk.fill(0x21); // the caller may reuse its buffer
    from = cut;
  }
  if (end) parts.push(reader.end());
  return { out: Buffer.concat(parts), usage: reader.usage(), rec, reader };
}

/** Cuts at every single offset, then at every byte at once. */
function everySplit(bytes: Buffer, check: (run: ReturnType<typeof feed>) => void): void {
  for (let at = 0; at <= bytes.length; at++) check(feed(bytes, [at], true));
  check(feed(bytes, Array.from({ length: bytes.length }, (_, i) => i), true));
}

describe('the Responses API (/v1/responses)', () => {
  describe('a whole (non-stream) answer', () => {
    it('reads usage.input_tokens and usage.output_tokens, wherever usage sits among the members', () => {
      const openAi = JSON.stringify(response('completed', USAGE, [message(TEXT)]));
      expect(api.jsonUsage(Buffer.from(openAi))).toMatchObject({ promptTokens: 36, completionTokens: 87, text: '' });
      // usage last (as vLLM orders its members), with white space.
      const last = `{"id":"resp_2","object":"response","output":[${JSON.stringify(message(TEXT))}] ,\n "usage" : ${JSON.stringify(USAGE, null, 1)} }`;
      expect(api.jsonUsage(Buffer.from(last))).toMatchObject({ promptTokens: 36, completionTokens: 87 });
      // An incomplete answer (max_output_tokens reached) reports its usage too.
      const incomplete = JSON.stringify(response('incomplete', { ...USAGE, output_tokens: 16 }, [message(TEXT)]));
      expect(api.jsonUsage(Buffer.from(incomplete))).toMatchObject({ promptTokens: 36, completionTokens: 16 });
    });

    it('reads only the answer\'s own usage: not a usage-like key in metadata or text', () => {
      const answer = { ...response('completed', USAGE, [message('"usage":{"input_tokens":1,"output_tokens":2}')]), metadata: { usage: { input_tokens: 1, output_tokens: 2 } } };
      expect(api.jsonUsage(Buffer.from(JSON.stringify(answer)))).toMatchObject({ promptTokens: 36, completionTokens: 87 });
    });

    it('without an output count, gives the generated text: output_text and refusal parts, function calls, reasoning', () => {
      const output = [
        { id: 'rs_1', type: 'reasoning', summary: [{ type: 'summary_text', text: 'thinking' }], content: [{ type: 'reasoning_text', text: ' hard' }] },
        message('Hello'),
        { id: 'fc_1', type: 'function_call', name: 'f', arguments: '{"a":1}', call_id: 'c' },
        { ...message(''), content: [{ type: 'output_text', text: ', world', annotations: [] }, { type: 'refusal', refusal: 'no' }, { type: 'output_text', text: '!' }] },
        { id: 'ws_1', type: 'web_search_call', status: 'completed' },
      ];
      const text = 'thinking hardHellof{"a":1}, worldno!';
      expect(api.jsonUsage(Buffer.from(JSON.stringify(response('completed', null, output))))).toMatchObject({ promptTokens: null, completionTokens: null, text });
      expect(api.jsonUsage(Buffer.from(JSON.stringify(response('completed', { input_tokens: 5 }, output))))).toMatchObject({ promptTokens: 5, completionTokens: null, text });
    });

    it('read from its end or parsed whole, the counts are those JSON.parse reads, for every shape of the members around usage', () => {
      const shapes = [
        (u: string) => `{"id":"r","output":[${JSON.stringify(message(TEXT))}],"usage":${u},"user":null,"metadata":{}}`,
        (u: string) => `{"id":"r","output":[],"usage":${u},"user":"u-1","metadata":{"team":"a","n":"1"}}`,
        (u: string) => `{"id":"r","usage":${u},"output":[${JSON.stringify(message(TEXT))}]}`,
        (u: string) => `{"id":"r","output":[],"usage":${u},"metadata":{"usage":{"input_tokens":1,"output_tokens":2}}}`,
        (u: string) => `{"usage":{"input_tokens":9,"output_tokens":9},"output":[],"usage":${u},"user":null}`,
        (u: string) => `{"id":"r","output":[],"usage":${u},"metadata":{"long":"${'x'.repeat(400)}"}}`,
        (u: string) => ` {\n "id": "r",\n "usage": ${u} ,\n "user": null\n}\n `,
      ];
      const usages = [JSON.stringify(USAGE), JSON.stringify(USAGE, null, 2), '{"input_tokens":3}', 'null', '{"input_tokens":1,"output_tokens":0}'];
      for (const shape of shapes) {
        for (const u of usages) {
          const body = shape(u);
          const whole = JSON.parse(body).usage;
          const got = api.jsonUsage(Buffer.from(body));
          expect(got.promptTokens, body).toBe(typeof whole?.input_tokens === 'number' ? whole.input_tokens : null);
          expect(got.completionTokens, body).toBe(typeof whole?.output_tokens === 'number' ? whole.output_tokens : null);
        }
      }
    });

    it('malformed answers give nulls and no text; counts that are not numbers >= 0 are no counts', () => {
      for (const body of ['', '{', 'null', '[]', '"x"', '{"usage":[1],"output":5}']) {
        expect(api.jsonUsage(Buffer.from(body)), body).toMatchObject({ promptTokens: null, completionTokens: null, text: '' });
      }
      const bad = JSON.stringify(response('completed', { input_tokens: '3', output_tokens: -1 }, [message('Hi')]));
      expect(api.jsonUsage(Buffer.from(bad))).toMatchObject({ promptTokens: null, completionTokens: null, text: 'Hi' });
    });
  });

  describe('a stream', () => {
    const full = Buffer.from(streamEvents({ type: 'response.completed', usage: USAGE }).join(''));

    it('is forwarded byte for byte and its usage read from response.completed, at every split', () => {
      everySplit(full, ({ out, usage, rec }) => {
        expect(out.equals(full)).toBe(true);
        expect(usage.promptTokens).toBe(36);
        expect(usage.completionTokens).toBe(87);
        expect(rec.stopped).toBe(true); // the text is not needed
      });
    });

    it('with CRLF line ends and without event lines (data only) too', () => {
      const crlf = Buffer.from(full.toString().replace(/\n/g, '\r\n'));
      const dataOnly = Buffer.from(full.toString().split('\n').filter((l) => !l.startsWith('event:')).join('\n'));
      for (const bytes of [crlf, dataOnly]) {
        everySplit(bytes, ({ out, usage }) => {
          expect(out.equals(bytes)).toBe(true);
          expect(usage).toMatchObject({ promptTokens: 36, completionTokens: 87 });
        });
      }
    });

    it('reads the usage of a stream that ends with response.incomplete or response.failed', () => {
      for (const type of ['response.incomplete', 'response.failed']) {
        const bytes = Buffer.from(streamEvents({ type, usage: { ...USAGE, output_tokens: 4 } }).join(''));
        const { usage, rec } = feed(bytes, [], true);
        expect(usage, type).toMatchObject({ promptTokens: 36, completionTokens: 4 });
        expect(rec.stopped).toBe(true);
      }
    });

    it('without usage at its end, hands on the text of the output_text deltas only (not the done events\' full text)', () => {
      for (const final of [null, { type: 'response.completed', usage: null }]) {
        const bytes = Buffer.from(streamEvents(final).join(''));
        const { usage, rec } = feed(bytes, [], true);
        expect(usage).toMatchObject({ promptTokens: null, completionTokens: null });
        expect(rec.stopped).toBe(false);
        expect(rec.pieces.join('')).toBe(TEXT);
      }
    });

    it('without usage at its end, also hands on function calls (name, argument deltas) and the deltas of reasoning text and summaries', () => {
      const ev = (o: Record<string, unknown>): string => `event: ${String(o.type)}\ndata: ${JSON.stringify(o)}\n\n`;
      const bytes = Buffer.from([
        ev({ type: 'response.reasoning_summary_text.delta', item_id: 'rs_1', output_index: 0, summary_index: 0, delta: 'Plan: ' }),
        ev({ type: 'response.reasoning_text.delta', item_id: 'rs_1', output_index: 0, content_index: 0, delta: 'think. ' }),
        ev({ type: 'response.output_item.added', output_index: 1, item: { id: 'fc_1', type: 'function_call', status: 'in_progress', name: 'get_weather', arguments: '', call_id: 'c1' } }),
        ev({ type: 'response.function_call_arguments.delta', item_id: 'fc_1', output_index: 1, delta: '{"city":' }),
        ev({ type: 'response.function_call_arguments.delta', item_id: 'fc_1', output_index: 1, delta: '"SF"}' }),
        ev({ type: 'response.function_call_arguments.done', item_id: 'fc_1', output_index: 1, arguments: '{"city":"SF"}' }),
      ].join(''));
      everySplit(bytes, ({ usage, rec }) => {
        expect(usage).toMatchObject({ promptTokens: null, completionTokens: null });
        expect(rec.pieces.join('')).toBe('Plan: think. get_weather{"city":"SF"}');
      });
    });

    it('cut at any byte before its usage: the deltas of the events that ended', () => {
      const events = streamEvents({ type: 'response.completed', usage: USAGE });
      const ends: number[] = [];
      let at = 0;
      for (const e of events) ends.push((at += Buffer.byteLength(e)));
      for (let cut = 0; cut < ends[ends.length - 1]; cut++) {
        // As the upstream call reads a stream that broke: usage() without end().
        const rec = new Recorder();
        const reader = api.streamUsage(false, rec, null, 0);
        reader.push(full.subarray(0, cut));
        const usage = reader.usage();
        let expected = '';
        events.forEach((e, i) => {
          if (ends[i] <= cut && e.startsWith('event: response.output_text.delta')) expected += JSON.parse(e.slice(e.indexOf('data: ') + 6)).delta;
        });
        expect(usage.completionTokens, `cut at ${cut}`).toBeNull();
        expect(rec.pieces.join(''), `cut at ${cut}`).toBe(expected);
      }
    });

    it('a last event longer than 1 MiB (it echoes a large request) is still read for its usage, arriving in 64 KiB pieces', () => {
      const instructions = 'Follow the house style. '.repeat(50_000); // 1.2 MB, echoed by every response object
      const request = Buffer.from(JSON.stringify({ model: 'm', instructions, input: 'Hi', stream: true }));
      const usage = { input_tokens: 250_010, output_tokens: 900, output_tokens_details: { reasoning_tokens: 880 }, total_tokens: 250_910 };
      const ev = (o: Record<string, unknown>): string => `event: ${String(o.type)}\ndata: ${JSON.stringify(o)}\n\n`;
      const bytes = Buffer.from([
        ev({ type: 'response.created', response: { ...response('in_progress', null, []), instructions } }),
        ev({ type: 'response.output_text.delta', item_id: 'msg_1', output_index: 0, content_index: 0, delta: 'Hi there' }),
        ev({ type: 'response.completed', response: { ...response('completed', usage, [message('Hi there')]), instructions } }),
      ].join(''));
      const read = (requestBytes: number) => {
        const rec = new Recorder();
        const reader = api.streamUsage(true, rec, null, requestBytes);
        for (let at = 0; at < bytes.length; at += 65_536) reader.push(Buffer.from(bytes.subarray(at, at + 65_536)));
        reader.end();
        return reader.usage();
      };
      expect(read(request.length)).toMatchObject({ promptTokens: 250_010, completionTokens: 900 });
      // The bound stays: a line past it is not kept (for a small request, past 1 MiB).
      expect(read(100)).toMatchObject({ promptTokens: null, completionTokens: null });
    });

    it('a long stream from a pod that reports its count: past the held bound a cut stream is estimated per event, a whole one counted by its usage', () => {
      let seq = 0;
      const delta = (): string => `event: response.output_text.delta\ndata: ${JSON.stringify({ type: 'response.output_text.delta', item_id: 'msg_1', output_index: 0, content_index: 0, delta: ' tok', sequence_number: seq++ })}\n\n`;
      const deltas = Array.from({ length: Math.ceil((2 * HELD_EVENT_CHARS) / delta().length) }, delta);
      const done = `event: response.completed\ndata: ${JSON.stringify({ type: 'response.completed', response: response('completed', { ...USAGE, output_tokens: deltas.length }, []) })}\n\n`;
      const cut = feed(Buffer.from(deltas.join('')), [], false, 1);
      expect(cut.usage.completionTokens).toBeNull();
      expect(cut.rec.uncountedTokens).toBe(deltas.length); // one token per event, none parsed
      expect(cut.rec.pieces).toEqual([]);
      expect(cut.reader.textEvents).toBe(deltas.length);
      const whole = feed(Buffer.from(deltas.join('') + done), [], true, 1);
      expect(whole.usage.completionTokens).toBe(deltas.length);
      expect(whole.rec.uncountedTokens).toBe(0);
    });
  });

  describe('the request', () => {
    const parse = (body: unknown) => {
      const raw = Buffer.from(JSON.stringify(body));
      return { raw, req: api.parse(raw, '/v1/responses') };
    };

    it('a stream goes upstream as the client sent it: no stream_options added, nothing to strip', () => {
      for (const body of [
        { model: 'm', input: 'Say hello', stream: true },
        { model: 'm', input: 'Say hello', stream: true, stream_options: { include_obfuscation: false } },
        { model: 'm', input: 'Say hello' },
      ]) {
        const { raw, req } = parse(body);
        const up = api.upstreamBody(raw, req, null);
        expect(up.body).toBe(raw);
        expect(up.stripUsage).toBe(false);
      }
    });

    it('a rewritten model replaces only that member\'s value, still without include_usage', () => {
      const { raw, req } = parse({ model: 'm', input: 'Say hello', stream: true, seed: 1 });
      const up = api.upstreamBody(raw, req, 'served');
      expect(up.body.toString()).toBe('{"model":"served","input":"Say hello","stream":true,"seed":1}');
      expect(up.stripUsage).toBe(false);
      // A body naming model twice is sent again as JSON.parse read it, with the new model.
      const twice = Buffer.from('{"model":"a","model":"m","input":"x","stream":true}');
      expect(JSON.parse(api.upstreamBody(twice, api.parse(twice, '/v1/responses'), 'served').body.toString())).toEqual({ model: 'served', input: 'x', stream: true });
    });

    it('counts instructions with input (a string or message items), not the prompt template reference', () => {
      const text = (body: unknown) => api.promptText(parse(body).req).texts;
      expect(text({ model: 'm', instructions: 'Talk like a pirate.', input: 'Are semicolons optional?' })).toEqual(['Talk like a pirate.', 'Are semicolons optional?']);
      expect(text({
        model: 'm', instructions: 'Be brief.', prompt: { id: 'pmpt_1', version: '2' },
        input: [{ role: 'user', content: [{ type: 'input_text', text: 'What is in this image?' }, { type: 'input_image', image_url: 'https://x/y.png' }] }],
      })).toEqual(['Be brief.', 'user', 'What is in this image?']);
      expect(text({ model: 'm', instructions: 7, input: 'x' })).toEqual(['x']);
    });
  });
});
