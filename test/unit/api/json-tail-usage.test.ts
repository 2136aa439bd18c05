import { describe, expect, it } from 'vitest';
import { trailingUsageObject } from '../../../src/api/json-tail-usage.js';
import { usageFromJsonTail } from '../../../src/api/openai-json-usage.js';
import { usageFromResponsesTail } from '../../../src/api/openai-responses-usage.js';

/** Generated text long enough that the answer's start is far outside any tail read. */
const LONG_TEXT = 'The quick brown fox jumps over the lazy dog. '.repeat(4000);

// Backends' answer ends, the members in their order (see openai-json-usage-trailing.test.ts).
const VLLM_USAGE = '"usage":{"prompt_tokens":12,"total_tokens":40,"completion_tokens":28,"prompt_tokens_details":null}';
const VLLM_CHAT = `{"id":"chatcmpl-5f1c","object":"chat.completion","created":1764680000,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"${LONG_TEXT}","refusal":null,"tool_calls":[],"reasoning":null},"logprobs":null,"finish_reason":"stop","stop_reason":null,"token_ids":null}],"service_tier":null,"system_fingerprint":null,${VLLM_USAGE},"prompt_logprobs":null,"prompt_token_ids":[128000,9906,0,3639],"kv_transfer_params":null}`;
const SGLANG_CHAT = `{"id":"2f0c","object":"chat.completion","created":1764680000,"model":"default","choices":[{"index":0,"message":{"role":"assistant","content":"${LONG_TEXT}","reasoning_content":null,"tool_calls":null},"logprobs":null,"finish_reason":"stop","matched_stop":128009}],"usage":{"prompt_tokens":9,"total_tokens":12,"completion_tokens":3,"prompt_tokens_details":null,"reasoning_tokens":0},"metadata":{"weight_version":"default"}}`;
// OpenAI: usage last, with nested details, pretty-printed.
const OPENAI_CHAT = `{\n  "id": "chatcmpl-1",\n  "object": "chat.completion",\n  "choices": [{"index": 0, "message": {"role": "assistant", "content": "${LONG_TEXT}"}, "finish_reason": "stop"}],\n  "usage": {\n    "prompt_tokens": 19,\n    "completion_tokens": 10,\n    "total_tokens": 29,\n    "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},\n    "completion_tokens_details": {"reasoning_tokens": 0}\n  }\n}\n`;
const EMBEDDINGS = `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[${Array.from({ length: 20_000 }, (_, i) => (i / 7).toFixed(6)).join(',')}]}],"model":"e","usage":{"prompt_tokens":8,"total_tokens":8}}`;
// The Responses API: usage with nested details, then user and metadata.
const RESPONSES = `{"id":"resp_1","object":"response","status":"completed","output":[{"type":"message","id":"m","status":"completed","role":"assistant","content":[{"type":"output_text","text":"${LONG_TEXT}","annotations":[]}]}],"usage":{"input_tokens":36,"input_tokens_details":{"cached_tokens":0},"output_tokens":87,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":123},"user":null,"metadata":{}}`;

const TAIL = 64 * 1024;

/** The last `n` bytes of an answer: what the router keeps of one too large to keep whole. */
function tail(answer: string, n = TAIL): Buffer {
  const b = Buffer.from(answer);
  return b.subarray(Math.max(0, b.length - n));
}

describe('usage read from the last bytes of a large JSON answer', () => {
  it('reads the usage of each backend\'s answer end, the answer\'s start cut off', () => {
    for (const a of [VLLM_CHAT, SGLANG_CHAT, OPENAI_CHAT, RESPONSES, EMBEDDINGS]) expect(Buffer.byteLength(a)).toBeGreaterThan(TAIL);
    expect(usageFromJsonTail(tail(VLLM_CHAT))).toEqual({ promptTokens: 12, completionTokens: 28, text: '', generated: null });
    expect(usageFromJsonTail(tail(SGLANG_CHAT))).toEqual({ promptTokens: 9, completionTokens: 3, text: '', generated: null });
    expect(usageFromJsonTail(tail(OPENAI_CHAT))).toEqual({ promptTokens: 19, completionTokens: 10, text: '', generated: null });
    // Embeddings report no completion count: none is made up.
    expect(usageFromJsonTail(tail(EMBEDDINGS))).toEqual({ promptTokens: 8, completionTokens: null, text: '', generated: null });
    expect(usageFromResponsesTail(tail(RESPONSES))).toEqual({ promptTokens: 36, completionTokens: 87, text: '', generated: null });
  });

  it('at every cut of an answer, gives the usage JSON.parse reads or nothing, never another', () => {
    const answers = [VLLM_CHAT, SGLANG_CHAT, OPENAI_CHAT, RESPONSES].map((a) => a.replace(LONG_TEXT, 'short text, with \\"quotes\\" \\"usage\\": {} inside'));
    for (const a of answers) {
      const whole = JSON.parse(a).usage;
      const b = Buffer.from(a);
      let read = 0;
      for (let cut = 0; cut < b.length; cut++) {
        const u = trailingUsageObject(b.subarray(cut));
        if (u === null) continue;
        read++;
        expect(u).toEqual(whole);
      }
      // Read from every cut that keeps the `,` before the usage member's key (which tells it is a key), none after.
      const comma = a.slice(0, a.lastIndexOf('"usage"')).trimEnd().length - 1;
      expect(a[comma]).toBe(',');
      expect(read).toBe(comma + 1);
    }
  });

  it('reads nothing when the answer does not end with its usage', () => {
    const cases = [
      // usage first, the text after it
      `{"usage":{"prompt_tokens":1,"completion_tokens":2},"choices":[{"text":"${LONG_TEXT}"}]}`,
      // a large member after usage (vLLM's prompt_logprobs when asked for)
      `{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2},"prompt_logprobs":[{"1":{"logprob":-1.5,"rank":1}}]}`,
      // a usage inside another member, not the root's
      `{"choices":[],"extra":{"a":{"usage":{"prompt_tokens":1,"completion_tokens":999}}}}`,
      `{"choices":[],"extra":{"usage":{"prompt_tokens":1,"completion_tokens":999}}}`,
      `{"choices":[],"extra":[{"usage":{"completion_tokens":999}}]}`,
      // the key only inside a string
      `{"choices":[{"text":"\\"usage\\":{\\"completion_tokens\\":999}"}],"n":1}`,
      // no usage, or not an object
      `{"choices":[],"usage":null}`,
      `{"choices":[],"usage":[1,2]}`,
      `{"choices":[],"usage":7}`,
      // not JSON that ends an object
      `{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}`,
      '',
      '   ',
      // more than 16 members after it
      `{"usage":{"completion_tokens":2},${Array.from({ length: 17 }, (_, i) => `"m${i}":null`).join(',')}}`,
    ];
    for (const c of cases) expect(trailingUsageObject(Buffer.from(c)), c.slice(0, 80)).toBeNull();
    // 16 members after it are stepped over.
    const sixteen = `{"usage":{"completion_tokens":2},${Array.from({ length: 16 }, (_, i) => `"m${i}":null`).join(',')}}`;
    expect(trailingUsageObject(Buffer.from(sixteen))).toEqual({ completion_tokens: 2 });
  });

  it('the last usage member wins, as JSON.parse keeps the last of a repeated key', () => {
    const a = '{"usage":{"completion_tokens":1},"choices":[],"usage":{"completion_tokens":2,"d":{"x":1}}}';
    expect(trailingUsageObject(Buffer.from(a))).toEqual(JSON.parse(a).usage);
  });
});
