import { describe, expect, it } from 'vitest';
import { usageFromJson } from '../../../src/api/openai-json-usage.js';

describe('usageFromJson', () => {
  it('reads usage and text of a completions answer', () => {
    const body = JSON.stringify({
      id: 'cmpl-1', object: 'text_completion', model: 'm',
      choices: [{ index: 0, text: 'héllo wörld', finish_reason: 'stop' }],
      usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 },
    });
    expect(usageFromJson(Buffer.from(body))).toEqual({ promptTokens: 7, completionTokens: 3, text: 'héllo wörld', generated: null });
    expect(usageFromJson(body)).toEqual({ promptTokens: 7, completionTokens: 3, text: 'héllo wörld', generated: null });
  });

  it('reads chat message content of every choice, including content parts', () => {
    const body = JSON.stringify({
      object: 'chat.completion',
      choices: [
        { index: 0, message: { role: 'assistant', content: 'one ' } },
        { index: 1, message: { role: 'assistant', content: [{ type: 'text', text: 'two' }, { type: 'image' }] } },
        { index: 2, message: { role: 'assistant', content: null, tool_calls: [] } },
      ],
      usage: { prompt_tokens: 12, completion_tokens: 2 },
    });
    expect(usageFromJson(body)).toEqual({ promptTokens: 12, completionTokens: 2, text: 'one two', generated: null });
  });

  it('gives null counts but the text when usage is absent or odd', () => {
    expect(usageFromJson('{"choices":[{"text":"abc"}]}')).toEqual({ promptTokens: null, completionTokens: null, text: 'abc', generated: null });
    expect(usageFromJson('{"choices":[{"text":"x"}],"usage":null}')).toEqual({ promptTokens: null, completionTokens: null, text: 'x', generated: null });
    expect(usageFromJson('{"usage":{"prompt_tokens":"5","completion_tokens":-1}}'))
      .toEqual({ promptTokens: null, completionTokens: null, text: '', generated: null });
    expect(usageFromJson('{"usage":{"completion_tokens":4}}')).toEqual({ promptTokens: null, completionTokens: 4, text: '', generated: null });
  });

  it('gives nulls and empty text for malformed JSON or non-objects', () => {
    for (const body of ['', '{"usage":', 'not json', '42', 'null', '[1,2]']) {
      expect(usageFromJson(body)).toEqual({ promptTokens: null, completionTokens: null, text: '', generated: null });
    }
  });
});
