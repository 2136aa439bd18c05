/**
 * The prompt and the answer read a function call the same way (openai-function-call.ts): the same
 * name and arguments, counted as two texts in a prompt and within the answer's one text.
 */
import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import { describe, expect, it } from 'vitest';
import { choiceText } from '../../../src/api/openai-choice-text.js';
import { extractPromptText } from '../../../src/api/openai-prompt.js';

const n = (s: string): number => encode(s).length;

/** Calls of every shape the APIs send, and some they should not (skipped field by field). */
const CALLS: unknown[] = [
  { name: 'get_weather', arguments: '{"location": "San Francisco, CA", "unit": "celsius"}' },
  { name: 'search', arguments: '{"q":"x"}' },
  { name: 'run_v2', arguments: '{}' },
  { name: 'get_time' },
  { arguments: '{"city":"Par' },
  { name: 7, arguments: {} },
  'get_weather',
  null,
];

/** What an assistant message with `call` as its only tool call adds to the prompt's texts, after its role. */
function promptTexts(call: unknown, legacy: boolean): string[] {
  const m = legacy ? { role: 'assistant', function_call: call } : { role: 'assistant', tool_calls: [{ type: 'function', function: call }] };
  return extractPromptText({ messages: [m] }, 'chat').texts.slice(1);
}

/** The generated text of an answer whose message has `call` as its only tool call. */
function answerText(call: unknown, legacy: boolean): string {
  return choiceText({ message: legacy ? { role: 'assistant', content: null, function_call: call } : { role: 'assistant', content: null, tool_calls: [{ function: call }] } });
}

describe('a function call in the prompt and in the answer', () => {
  it('both read the same name and arguments: the prompt as two texts, the answer as one', () => {
    for (const legacy of [false, true]) {
      for (const call of CALLS) {
        const texts = promptTexts(call, legacy);
        expect(texts.length, JSON.stringify(call)).toBeLessThanOrEqual(2);
        expect(texts.join(''), JSON.stringify(call)).toBe(answerText(call, legacy));
      }
    }
  });

  it('a name then JSON arguments count the same either way', () => {
    for (const call of CALLS.slice(0, 3) as { name: string; arguments: string }[]) {
      expect(n(answerText(call, false))).toBe(n(call.name) + n(call.arguments));
    }
  });

  it('the prompt keeps them apart, as a rendered prompt does, where joined they would merge', () => {
    expect(promptTexts({ name: 'x', arguments: 'yz' }, false)).toEqual(['x', 'yz']);
    expect(n('x') + n('yz')).toBe(2);
    expect(n('xyz')).toBe(1);
  });
});
