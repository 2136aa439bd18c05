import { afterEach, describe, expect, it, vi } from 'vitest';
import { usageFromJson } from '../../../src/api/openai-json-usage.js';
import { choicesText } from '../../../src/api/openai-choice-text.js';
import { tokenCount } from '../../../src/api/inference-api.js';

/**
 * What a whole-answer JSON.parse reads: the reference (the text only when no completion count
 * came, the only case it is read in; compared with `agreed`).
 */
function parsedUsage(body: string): { promptTokens: number | null; completionTokens: number | null; text: string; generated: null } {
  let a: { usage?: { prompt_tokens?: unknown; completion_tokens?: unknown } | null; choices?: unknown };
  try {
    a = JSON.parse(body);
  } catch {
    return { promptTokens: null, completionTokens: null, text: '', generated: null };
  }
  const u = typeof a.usage === 'object' && a.usage !== null ? a.usage : null;
  return {
    promptTokens: u === null ? null : tokenCount(u.prompt_tokens),
    completionTokens: u === null ? null : tokenCount(u.completion_tokens),
    text: u !== null && tokenCount(u.completion_tokens) !== null ? '' : choicesText(a.choices),
    generated: null,
  };
}

// vLLM's answers, members in the order of its ChatCompletionResponse / CompletionResponse
// (`model_dump()` keeps the None members, Starlette's JSONResponse writes them compactly): usage,
// then the vLLM-only members. Its usage: prompt_tokens, total_tokens, completion_tokens,
// prompt_tokens_details.
const VLLM_USAGE = '"usage":{"prompt_tokens":12,"total_tokens":40,"completion_tokens":28,"prompt_tokens_details":null}';
const VLLM_CHAT = '{"id":"chatcmpl-5f1c","object":"chat.completion","created":1764680000,"model":"meta-llama/Llama-3.1-8B-Instruct",'
  + '"choices":[{"index":0,"message":{"role":"assistant","content":"Hello! How can I help?","refusal":null,"annotations":null,'
  + '"audio":null,"function_call":null,"tool_calls":[],"reasoning":null},"logprobs":null,"finish_reason":"stop","stop_reason":null,'
  + `"token_ids":null}],"service_tier":null,"system_fingerprint":null,${VLLM_USAGE},"prompt_logprobs":null,"prompt_token_ids":null,`
  + '"kv_transfer_params":null}';
const VLLM_COMPLETION = '{"id":"cmpl-9a2b","object":"text_completion","created":1764680000,"model":"m","choices":[{"index":0,'
  + '"text":" a city in California","logprobs":null,"finish_reason":"length","stop_reason":null,"token_ids":null,"prompt_logprobs":null,'
  + `"prompt_token_ids":null}],"service_tier":null,"system_fingerprint":null,${VLLM_USAGE},"kv_transfer_params":null}`;
// With `return_token_ids`: the prompt's token ids after usage.
const VLLM_CHAT_TOKEN_IDS = VLLM_CHAT.replace('"prompt_token_ids":null', '"prompt_token_ids":[128000,9906,0,3639,374,279,6864,315,9822,30]');

// SGLang's ChatCompletionResponse: usage, then metadata (the weight version); its usage ends with
// reasoning_tokens.
const SGLANG_CHAT = '{"id":"2f0c","object":"chat.completion","created":1764680000,"model":"default","choices":[{"index":0,'
  + '"message":{"role":"assistant","content":"Paris.","reasoning_content":null,"tool_calls":null},"logprobs":null,'
  + '"finish_reason":"stop","matched_stop":128009}],"usage":{"prompt_tokens":9,"total_tokens":12,"completion_tokens":3,'
  + '"prompt_tokens_details":null,"reasoning_tokens":0},"metadata":{"weight_version":"default"}}';
// SGLang's scoring answer: usage, then its object type.
const SGLANG_SCORING = '{"scores":[[0.25,0.75]],"pooled_hidden_states":null,"model":"m","usage":{"prompt_tokens":7,"total_tokens":7,'
  + '"completion_tokens":0,"prompt_tokens_details":null,"reasoning_tokens":0},"object":"scoring"}';

/** usageFromJson's reading, its text dropped when a completion count came (the whole-answer path reads it anyway). */
function agreed(body: string): ReturnType<typeof parsedUsage> {
  const got = usageFromJson(body);
  return { ...got, text: got.completionTokens === null ? got.text : '', generated: null };
}

describe('usageFromJson of answers with members after usage', () => {
  afterEach(() => { vi.restoreAllMocks(); });

  it('reads vLLM\'s and SGLang\'s answers without parsing them', () => {
    const cases: [string, number, number][] = [
      [VLLM_CHAT, 12, 28], [VLLM_COMPLETION, 12, 28], [VLLM_CHAT_TOKEN_IDS, 12, 28], [SGLANG_CHAT, 9, 3], [SGLANG_SCORING, 7, 0],
      // Pretty-printed.
      [JSON.stringify(JSON.parse(VLLM_CHAT), null, 2), 12, 28], [JSON.stringify(JSON.parse(SGLANG_CHAT), null, '\t'), 9, 3],
    ];
    for (const [body, promptTokens, completionTokens] of cases) {
      const parse = vi.spyOn(JSON, 'parse');
      const got = usageFromJson(Buffer.from(body));
      expect(parse, body).not.toHaveBeenCalled();
      vi.restoreAllMocks();
      expect(got, body).toEqual({ promptTokens, completionTokens, text: '', generated: null });
      expect(got, body).toEqual(parsedUsage(body));
    }
  });

  it('parses only the usage object when it is not flat (vLLM with cached-token details)', () => {
    const body = VLLM_CHAT.replace('"prompt_tokens_details":null', '"prompt_tokens_details":{"cached_tokens":8}');
    const parse = vi.spyOn(JSON, 'parse');
    expect(usageFromJson(body)).toEqual({ promptTokens: 12, completionTokens: 28, text: '', generated: null });
    expect(parse).toHaveBeenCalledTimes(1);
    expect((parse.mock.calls[0][0] as string).length).toBeLessThan(120);
  });

  it('reads an embeddings answer with members after usage without parsing it', () => {
    const data = Array.from({ length: 4 }, (_, i) => ({ object: 'embedding', index: i, embedding: [0.5, -0.25, i] }));
    const body = JSON.stringify({ id: 'embd-1', object: 'list', created: 1, model: 'm', data, usage: { prompt_tokens: 4, total_tokens: 4, completion_tokens: 0, prompt_tokens_details: null }, kv_transfer_params: null });
    const noCompletion = body.replace('"completion_tokens":0,', '');
    for (const b of [body, noCompletion]) {
      const parse = vi.spyOn(JSON, 'parse');
      const got = usageFromJson(b);
      expect(parse, b).not.toHaveBeenCalled();
      vi.restoreAllMocks();
      expect(got, b).toEqual(parsedUsage(b));
    }
  });

  it('agrees with JSON.parse whatever follows usage: duplicates, "usage" in strings and objects, escapes, odd values', () => {
    const head = '{"choices":[{"text":"t"}],"usage":{"prompt_tokens":2,"completion_tokens":3}';
    const tails = [
      ',"usage":null}', ',"x":1,"usage":{"prompt_tokens":5,"completion_tokens":6}}', ',"x":null,"usage":{"prompt_tokens":5}}',
      ',"note":"usage"}', ',"note":"\\"usage\\":{\\"completion_tokens\\":9}"}', ',"note":"a,\\"usage\\":{\\"completion_tokens\\":9}}"}',
      ',"u\\u0073age":null}', ',"\\u0075sage":{"completion_tokens":9}}', ',"metadata":{"usage":{"completion_tokens":5}}}',
      ',"metadata":{"usage":null}}', ',"a":[{"usage":1}]}', ',"a":[[1]]}', ',"a":{"b":{"c":1}}}', ',"a":[]}', ',"a":{}}', ',"a":[1,"x",null,true,-0.5e-3]}',
      `,"long":"${'x'.repeat(300)}"}`, ',"a":"ünï 🙂"}', ',"a":1.5,"b":-2,"c":0,"d":1e9,"e":true,"f":false}', ',"a":01}', ',"a":1.}', ',"a":-}',
      ',"a":nul}', ',"a":"b"c"}', ',"a"}', ',"a":}', ',:1}', ',"a":1,}', ',,"a":1}', '"a":1}', ',"a":1 2}', ',"a":[1,]}', ',"a":{"b":1,}}',
      ',"a":"tab\there"}', `${',"m":null'.repeat(16)}}`, `${',"m":null'.repeat(17)}}`, ' , "a" : [ 1 , 2 ] , "b" : { "c" : "d" } }',
    ];
    for (const tail of tails) {
      const body = head + tail;
      const got = agreed(body);
      const want = parsedUsage(body);
      let valid = true;
      try { JSON.parse(body); } catch { valid = false; }
      // An invalid answer that ends in valid members may be read for its usage; a valid one is read as JSON.parse reads it.
      if (valid) expect(got, body).toEqual(want);
    }
    // The plain ones are read without a parse.
    for (const tail of [
      ',"note":"usage"}', ',"metadata":{"usage":null}}', ',"a":[]}', ',"a":{}}', ',"a":[1,"x",null,true,-0.5e-3]}', ',"a":"ünï 🙂"}',
      ',"a":1.5,"b":-2,"c":0,"d":1e9,"e":true,"f":false}', `${',"m":null'.repeat(16)}}`, ' , "a" : [ 1 , 2 ] , "b" : { "c" : "d" } }',
    ]) {
      const parse = vi.spyOn(JSON, 'parse');
      const got = usageFromJson(head + tail);
      expect(parse, tail).not.toHaveBeenCalled();
      vi.restoreAllMocks();
      expect(got, tail).toEqual({ promptTokens: 2, completionTokens: 3, text: '', generated: null });
    }
    // The usage that follows another member named usage: the last one counts.
    expect(usageFromJson(`${head},"usage":{"prompt_tokens":5,"completion_tokens":6},"z":null}`).completionTokens).toBe(6);
    expect(usageFromJson(`{"usage":{"prompt_tokens":5,"completion_tokens":6},${head.slice(1)},"z":null}`).completionTokens).toBe(3);
    // The only member: usage first, then the trailing ones.
    expect(usageFromJson('{"usage":{"prompt_tokens":1,"completion_tokens":1},"choices":null,"z":null}').completionTokens).toBe(1);
  });
});
