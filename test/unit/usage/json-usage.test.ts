import { afterEach, describe, expect, it, vi } from 'vitest';
import { usageFromJson } from '../../../src/api/openai-json-usage.js';
import { choicesText } from '../../../src/api/openai-choice-text.js';
import { tokenCount } from '../../../src/api/inference-api.js';
import { pickWith, xorshift } from '../../helpers/xorshift.js';

/** What a whole-answer JSON.parse reads: the reference for the trailing-usage path. */
function parsedUsage(body: string): { promptTokens: number | null; completionTokens: number | null; text: string } {
  let a: { usage?: { prompt_tokens?: unknown; completion_tokens?: unknown } | null; choices?: unknown };
  try {
    a = JSON.parse(body);
  } catch {
    return { promptTokens: null, completionTokens: null, text: '' };
  }
  if (typeof a !== 'object' || a === null) return { promptTokens: null, completionTokens: null, text: '' };
  const u = typeof a.usage === 'object' && a.usage !== null ? a.usage : null;
  return { promptTokens: u === null ? null : tokenCount(u.prompt_tokens), completionTokens: u === null ? null : tokenCount(u.completion_tokens), text: choicesText(a.choices) };
}

describe('usageFromJson', () => {
  it('reads usage of a completions answer (the text is not needed when the completion count came)', () => {
    const body = JSON.stringify({
      id: 'cmpl-1', object: 'text_completion', model: 'm',
      choices: [{ index: 0, text: 'héllo wörld', finish_reason: 'stop' }],
      usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 },
    });
    expect(usageFromJson(Buffer.from(body))).toEqual({ promptTokens: 7, completionTokens: 3, text: '', generated: null });
    expect(usageFromJson(body)).toEqual({ promptTokens: 7, completionTokens: 3, text: '', generated: null });
  });

  it('reads usage that is not the last member, and the text, from the whole answer', () => {
    const body = JSON.stringify({
      usage: { prompt_tokens: 12, completion_tokens: 2 },
      object: 'chat.completion',
      choices: [
        { index: 0, message: { role: 'assistant', content: 'one ' } },
        { index: 1, message: { role: 'assistant', content: [{ type: 'text', text: 'two' }, { type: 'image' }] } },
        { index: 2, message: { role: 'assistant', content: null, tool_calls: [] } },
      ],
    });
    expect(usageFromJson(body)).toEqual({ promptTokens: 12, completionTokens: 2, text: 'one two', generated: null });
  });

  it('gives null counts but the text when usage is absent or odd', () => {
    expect(usageFromJson('{"choices":[{"text":"abc"}]}')).toEqual({ promptTokens: null, completionTokens: null, text: 'abc', generated: null });
    expect(usageFromJson('{"choices":[{"text":"x"}],"usage":null}')).toEqual({ promptTokens: null, completionTokens: null, text: 'x', generated: null });
    expect(usageFromJson('{"choices":[{"text":"x"}],"usage":{"prompt_tokens":"5","completion_tokens":-1}}'))
      .toEqual({ promptTokens: null, completionTokens: null, text: 'x', generated: null });
    expect(usageFromJson('{"choices":[{"text":"y"}],"usage":{"prompt_tokens":3}}')).toEqual({ promptTokens: 3, completionTokens: null, text: 'y', generated: null });
    expect(usageFromJson('{"usage":{"completion_tokens":4}}')).toEqual({ promptTokens: null, completionTokens: 4, text: '', generated: null });
  });

  it('a count past 2^53 is not reported (the text is kept, to be counted); a fraction is rounded', () => {
    for (const big of ['1e300', '9007199254740992', '12345678901234567890']) {
      expect(usageFromJson(`{"choices":[{"text":"kept"}],"usage":{"prompt_tokens":${big},"completion_tokens":${big}}}`))
        .toEqual({ promptTokens: null, completionTokens: null, text: 'kept', generated: null });
    }
    expect(usageFromJson('{"choices":[{"text":"x"}],"usage":{"prompt_tokens":9007199254740991,"completion_tokens":2}}').promptTokens).toBe(9007199254740991);
    expect(usageFromJson('{"choices":[{"text":"x"}],"usage":{"prompt_tokens":13.6,"completion_tokens":2.5}}')).toMatchObject({ promptTokens: 14, completionTokens: 3 });
    expect(tokenCount(0.4)).toBe(0);
    expect(tokenCount(Number.NaN)).toBeNull();
    expect(tokenCount(Number.POSITIVE_INFINITY)).toBeNull();
  });

  it('without a completion count, the text includes tool calls, reasoning and refusals, not only content', () => {
    const answer = {
      choices: [{
        index: 0,
        message: {
          role: 'assistant', content: null, refusal: null, reasoning_content: 'Look it up. ',
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"SF"}' } }, null, { function: 7 }],
        },
      }, { index: 1, message: { role: 'assistant', content: 'Hi', reasoning: ' (thought)', function_call: { name: 'f', arguments: '{}' } } },
      { index: 2, message: { role: 'assistant', content: null, refusal: 'I cannot.' } }],
      usage: { prompt_tokens: 7 },
    };
    expect(usageFromJson(JSON.stringify(answer))).toEqual({
      promptTokens: 7, completionTokens: null, text: 'Look it up. get_weather{"city":"SF"}Hi (thought)f{}I cannot.', generated: null,
    });
    // A stream chunk's delta the same way.
    expect(choicesText([{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{"ci' } }] } }])).toBe('{"ci');
    expect(choicesText([{ index: 0, delta: { reasoning_content: 'Hmm' } }])).toBe('Hmm');
  });

  describe('an answer without choices (embeddings) whose usage names no completion count', () => {
    afterEach(() => { vi.restoreAllMocks(); });
    const data = Array.from({ length: 8 }, (_, i) => ({ object: 'embedding', index: i, embedding: Array.from({ length: 64 }, (_, j) => (i * 64 + j) / 1e4 - 0.02) }));

    it('reads the trailing usage without parsing the whole answer (as OpenAI and TEI send it)', () => {
      const body = JSON.stringify({ object: 'list', data, model: 'text-embedding-3-small', usage: { prompt_tokens: 8, total_tokens: 8 } });
      const parse = vi.spyOn(JSON, 'parse');
      expect(usageFromJson(body)).toEqual({ promptTokens: 8, completionTokens: null, text: '', generated: null });
      expect(parse).not.toHaveBeenCalled();
      expect(usageFromJson(body)).toEqual({ ...parsedUsage(body), generated: null });
      // A usage object with details: only that object is parsed.
      const detailed = JSON.stringify({ object: 'list', data, model: 'm', usage: { prompt_tokens: 8, total_tokens: 8, prompt_tokens_details: { cached_tokens: 0 } } });
      parse.mockClear();
      expect(usageFromJson(detailed)).toEqual({ promptTokens: 8, completionTokens: null, text: '', generated: null });
      expect(parse).toHaveBeenCalledTimes(1);
      expect((parse.mock.calls[0][0] as string).length).toBeLessThan(100);
    });

    it('an answer that may have choices is still parsed whole for its text', () => {
      for (const body of [
        JSON.stringify({ model: 'helper-h', choices: [{ text: 'hello' }], usage: { prompt_tokens: 3, total_tokens: 8 } }),
        '{"\\u0063hoices":[{"text":"escaped key"}],"usage":{"prompt_tokens":3}}',
        JSON.stringify({ model: 'm', note: 'no "choices" here', usage: { prompt_tokens: 3, details: { x: 1 } } }),
      ]) {
        expect(usageFromJson(body)).toEqual({ ...parsedUsage(body), generated: null });
      }
      expect(usageFromJson(JSON.stringify({ choices: [{ text: 'hello' }], usage: { prompt_tokens: 3 } })).text).toBe('hello');
      expect(usageFromJson('{"\\u0063hoices":[{"text":"escaped key"}],"usage":{"prompt_tokens":3}}').text).toBe('escaped key');
    });
  });

  it('gives nulls and empty text for malformed JSON or non-objects, said unreadable (its output is not known)', () => {
    for (const body of ['', '{"usage":', 'not json', '42', 'null', '[1,2]', '}}', '"usage":{}}', '[{"usage":{"completion_tokens":1}}]', '{"usage":{"completion_tokens":1}} and more']) {
      expect(usageFromJson(body), body).toEqual({ promptTokens: null, completionTokens: null, text: '', generated: null, unreadable: true });
    }
    // An answer object without usage is read (its text is counted): not unreadable.
    expect(usageFromJson('{"choices":[{"text":"hi"}]}').unreadable).toBeUndefined();
  });

  it('reads only the root object\'s usage: nested, quoted and look-alike "usage" keys are not it', () => {
    const cases = [
      // A nested usage object ends the answer one brace deeper.
      '{"choices":[{"text":"a"}],"x":{"usage":{"prompt_tokens":1,"completion_tokens":1}}}',
      // "usage" inside a string (escaped quotes), at the end of a string, as a key of another member.
      '{"choices":[{"text":"say \\"usage\\": {\\"completion_tokens\\": 9}}"}],"usage":{"prompt_tokens":2,"completion_tokens":3}}',
      '{"choices":[{"text":"b"}],"k":"x\\"usage","usage":{"prompt_tokens":2,"completion_tokens":5}}',
      '{"choices":[{"text":"c"}],"usage":{"prompt_tokens":2,"usage":{"completion_tokens":7}}}',
      // A key that ends in "usage" after an escaped quote.
      '{"choices":[{"text":"g"}],"x\\"usage":{"prompt_tokens":1,"completion_tokens":9}}',
      '{"choices":[{"text":"d"}],"usage":{"prompt_tokens":2,"completion_tokens":4,"details":{"cached_tokens":1}}}',
      // Duplicate keys: JSON.parse keeps the last.
      '{"usage":{"prompt_tokens":1,"completion_tokens":1},"choices":[{"text":"e"}],"usage":{"prompt_tokens":8,"completion_tokens":9}}',
      ' \n{ "choices" : [ { "text" : "f" } ] ,\r\n\t"usage" : { "prompt_tokens" : 6 , "completion_tokens" : 2 } } \n',
    ];
    for (const body of cases) {
      const got = usageFromJson(body);
      const want = parsedUsage(body);
      expect({ p: got.promptTokens, c: got.completionTokens }, body).toEqual({ p: want.promptTokens, c: want.completionTokens });
      if (got.completionTokens === null) expect(got.text, body).toBe(want.text);
    }
  });

  it('agrees with a whole-answer parse on 2000 random answers', () => {
    let x = 7;
    const r = (): number => {
      x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0;
      return x / 2 ** 32;
    };
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
    const texts = ['hi', '"usage": {"completion_tokens": 1}}', '\\', '}', '{"usage":', 'ünï 🙂', ''];
    const usages: unknown[] = [
      { prompt_tokens: 3, completion_tokens: 4 }, { completion_tokens: 0 }, { prompt_tokens: 2 }, null, 5, 'x',
      { prompt_tokens: 1, completion_tokens: 2, completion_tokens_details: { reasoning_tokens: 1 } }, { completion_tokens: -2 },
    ];
    for (let i = 0; i < 2000; i++) {
      const members: [string, unknown][] = [['id', 'cmpl'], ['choices', [{ text: pick(texts) }, { message: { content: pick(texts) } }]]];
      if (r() < 0.8) members.splice(Math.floor(r() * (members.length + 1)), 0, ['usage', pick(usages)]);
      if (r() < 0.3) members.push(['meta', { usage: pick(usages) }]);
      if (r() < 0.2) members.push(['usage', pick(usages)]);
      const space = (): string => pick(['', ' ', '\n', '\t ']);
      const body = `${space()}{${members.map(([k, v]) => `${space()}${JSON.stringify(k)}${space()}:${space()}${JSON.stringify(v)}`).join(',')}${space()}}${space()}`;
      const got = usageFromJson(body);
      const want = parsedUsage(body);
      expect({ p: got.promptTokens, c: got.completionTokens }, body).toEqual({ p: want.promptTokens, c: want.completionTokens });
      if (got.completionTokens === null) expect(got.text, body).toBe(want.text);
    }
  });

  it('agrees with a whole-answer parse on 5000 random answers with members after usage, and reads the plain ones without it', () => {
    const r = xorshift(41);
    const pick = pickWith(r);
    const space = (): string => pick(['', '', ' ', '\n  ', '\t']);
    const usages = [
      '{"prompt_tokens":12,"total_tokens":40,"completion_tokens":28,"prompt_tokens_details":null}', '{"prompt_tokens":3,"completion_tokens":0}',
      '{"prompt_tokens":4,"total_tokens":4}', '{"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":1}}', '{"completion_tokens":1.5}',
      'null', '{}',
    ];
    /** Values after usage, each with whether the fast path reads it. */
    const values: [string, boolean][] = [
      ['null', true], ['true', true], ['false', true], ['0', true], ['-12.5e+3', true], ['7', true], ['""', true], ['"default"', true],
      ['"usage"', true], ['"ünï 🙂"', true], ['"}"', true], ['"{\\"usage\\":{\\"completion_tokens\\":9}}"', false], [`"${'y'.repeat(257)}"`, false],
      ['[]', true], ['[128000,9906,30]', true], ['[1,"x",null]', true], ['{}', true], ['{"weight_version":"default"}', true],
      ['{"usage":{"completion_tokens":5}}', false], ['{"usage":null}', true], ['[[1]]', false], ['{"a":[1]}', false],
      ['{"remote_engine_id":"e1","remote_block_ids":[1,2]}', false],
    ];
    const keys: [string, boolean][] = [
      ['"prompt_logprobs"', true], ['"prompt_token_ids"', true], ['"kv_transfer_params"', true], ['"metadata"', true], ['"object"', true],
      ['"usage"', false], ['"u\\u0073age"', false], ['"choices"', true],
    ];
    const texts = ['hi', '"usage": {"completion_tokens": 1}}', '}', 'ünï', ''];
    const JUNK = ['', ',', '}', '{', '"', '\\', ':', '0', 'l', ' ', ']', '['];
    let fastSeen = 0;
    for (let i = 0; i < 5000; i++) {
      const usage = pick(usages);
      const members = [`"id":"cmpl"`, `"choices":${JSON.stringify([{ text: pick(texts) }])}`, `"usage"${space()}:${space()}${usage}`];
      let fast = usage.startsWith('{"prompt_tokens":12') || usage.startsWith('{"prompt_tokens":3');
      const trailing = Math.floor(r() * 5);
      for (let t = 0; t < trailing; t++) {
        const [k, kFast] = pick(keys);
        const [v, vFast] = pick(values);
        fast &&= kFast && vFast;
        members.push(`${k}${space()}:${space()}${v}`);
      }
      let body = `${space()}{${members.map((m) => space() + m + space()).join(',')}}${space()}`;
      if (r() < 0.3) {
        const at = Math.floor(r() * body.length);
        body = body.slice(0, at) + pick(JUNK) + body.slice(at + (r() < 0.5 ? 1 : 0));
        fast = false;
      }
      let valid = true;
      try { JSON.parse(body); } catch { valid = false; }
      const parse = vi.spyOn(JSON, 'parse');
      const got = usageFromJson(body);
      const parsedWhole = parse.mock.calls.some((c) => c[0] === body);
      vi.restoreAllMocks();
      if (fast) {
        if (trailing > 0) fastSeen++;
        expect(parsedWhole, body).toBe(false);
      }
      if (!valid) continue;
      const want = parsedUsage(body);
      expect({ p: got.promptTokens, c: got.completionTokens }, body).toEqual({ p: want.promptTokens, c: want.completionTokens });
      if (got.completionTokens === null) expect(got.text, body).toBe(want.text);
    }
    expect(fastSeen).toBeGreaterThan(200);
  });
});
