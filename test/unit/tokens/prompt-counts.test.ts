import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import { afterEach, describe, expect, it } from 'vitest';
import { createTokenCounter, type RouterTokenCounter } from './request-counter.js';
import { parseTokenizerSettings } from '../../../src/tokens/tokenizer-settings.js';

const n = (s: string): number => encode(s).length;

/** Inline-only counters: no pool threads are started (pool size 0). */
function counter(estimator: 'bpe' | 'chars'): RouterTokenCounter {
  return createTokenCounter(parseTokenizerSettings({
    ROUTER_TOKEN_ESTIMATOR: estimator, ROUTER_TOKENIZER_POOL_SIZE: '0', ROUTER_TOKENIZER_INLINE_MAX_CHARS: '100000',
  }));
}

let c: RouterTokenCounter;
afterEach(async () => { await c.close(); });

describe('bpe estimator: request shapes', () => {
  it('completions: string prompt', () => {
    c = counter('bpe');
    expect(c.countRequest({ model: 'm', prompt: 'San Francisco is a', temperature: 0 }, 'completions')).toBe(4);
    expect(c.stats.inline).toBe(1);
  });

  it('completions: arrays of strings, token ids and token-id arrays', () => {
    c = counter('bpe');
    expect(c.countRequest({ prompt: ['San Francisco is a', 'Hello, world!'] }, 'completions')).toBe(4 + n('Hello, world!'));
    expect(c.countRequest({ prompt: [1, 2, 3, 4, 5] }, 'completions')).toBe(5);
    expect(c.countRequest({ prompt: [[1, 2, 3], [4, 5]] }, 'completions')).toBe(5);
  });

  it('completions: a missing or odd prompt counts 0 and does not throw', () => {
    c = counter('bpe');
    expect(c.countRequest({}, 'completions')).toBe(0);
    expect(c.countRequest({ prompt: null }, 'completions')).toBe(0);
    expect(c.countRequest({ prompt: { a: 1 } }, 'completions')).toBe(0);
    expect(c.countRequest({ prompt: [null, true, 'San Francisco is a'] }, 'completions')).toBe(4);
  });

  it('chat: role and text of every message, 3 per message, 3 to prime the reply', () => {
    c = counter('bpe');
    const body = {
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'San Francisco is a' },
      ],
    };
    const expected = (3 + n('system') + n('You are terse.')) + (3 + n('user') + 4) + 3;
    expect(c.countRequest(body, 'chat')).toBe(expected);
    // The one-message "Hello" chat that OpenAI reports as 8 prompt tokens for gpt-4o.
    expect(c.countRequest({ messages: [{ role: 'user', content: 'Hello' }] }, 'chat')).toBe(8);
  });

  it('chat: text parts of array content; null content adds only the framing, an image its estimate', () => {
    c = counter('bpe');
    const body = {
      messages: [{
        role: 'user',
        content: [
          { type: 'text', text: 'San Francisco is a' },
          { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
          { type: 'text', text: 'Hello, world!' },
        ],
      }, { role: 'assistant', content: null }],
    };
    // An image whose size is not known (a remote URL) counts 765 (docs/tokens.md#images-and-audio).
    expect(c.countRequest(body, 'chat')).toBe((3 + n('user') + 4 + 765 + n('Hello, world!')) + (3 + n('assistant')) + 3);
    expect(c.countRequest({ messages: [] }, 'chat')).toBe(0);
    expect(c.countRequest({ messages: 'hi' }, 'chat')).toBe(0);
  });

  it('chat: a message\'s name, tool calls (function name and arguments), tool results and refusals count', () => {
    c = counter('bpe');
    const args = JSON.stringify({ city: 'San Francisco', days: 3, note: 'word '.repeat(200) });
    const body = {
      messages: [
        { role: 'user', name: 'alice', content: 'Weather?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: args } }] },
        { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
        { role: 'assistant', content: null, function_call: { name: 'get_time', arguments: '{}' } },
        { role: 'assistant', content: [{ type: 'refusal', refusal: 'I cannot help with that.' }] },
      ],
    };
    const expected = (3 + n('user') + n('alice') + n('Weather?'))
      + (3 + n('assistant') + n('get_weather') + n(args))
      + (3 + n('tool') + n('sunny'))
      + (3 + n('assistant') + n('get_time') + n('{}'))
      + (3 + n('assistant') + n('I cannot help with that.')) + 3;
    expect(c.countRequest(body, 'chat')).toBe(expected);
    // Tool calls of an unexpected shape are skipped.
    expect(c.countRequest({ messages: [{ role: 'assistant', tool_calls: [null, 1, { function: 'x' }, { function: { name: 7, arguments: {} } }] }] }, 'chat'))
      .toBe(3 + n('assistant') + 3);
  });

  it('chat and responses: the JSON of the tool definitions counts (tools, legacy functions)', () => {
    c = counter('bpe');
    const tools = [{ type: 'function', function: { name: 'get_weather', description: 'word '.repeat(100), parameters: { type: 'object', properties: {} } } }];
    expect(c.countRequest({ messages: [{ role: 'user', content: 'Hello' }], tools }, 'chat')).toBe(8 + n(JSON.stringify(tools)));
    const functions = [{ name: 'f', parameters: {} }];
    expect(c.countRequest({ messages: [{ role: 'user', content: 'Hello' }], functions }, 'chat')).toBe(8 + n(JSON.stringify(functions)));
    expect(c.countRequest({ messages: [{ role: 'user', content: 'Hello' }], tools: [] }, 'chat')).toBe(8);
    expect(c.countRequest({ messages: [{ role: 'user', content: 'Hello' }], tools: 'x' }, 'chat')).toBe(8);
    const rTools = [{ type: 'function', name: 'f', description: 'd', parameters: {} }];
    expect(c.countRequest({ input: 'San Francisco is a', tools: rTools }, 'responses')).toBe(4 + n(JSON.stringify(rTools)));
    // Completions take no tools.
    expect(c.countRequest({ prompt: 'San Francisco is a', tools }, 'completions')).toBe(4);
  });

  it('responses: function_call items count their name and arguments, function_call_output items their output', () => {
    c = counter('bpe');
    const args = JSON.stringify({ q: 'word '.repeat(100) });
    const out = 'result '.repeat(100);
    const body = {
      input: [
        { role: 'user', content: 'Find it' },
        { type: 'function_call', call_id: 'c1', name: 'search', arguments: args },
        { type: 'function_call_output', call_id: 'c1', output: out },
        { type: 'function_call_output', call_id: 'c2', output: [{ type: 'input_text', text: 'Hello, world!' }] },
      ],
    };
    const expected = (3 + n('user') + n('Find it')) + (3 + n('search') + n(args)) + (3 + n(out)) + (3 + n('Hello, world!')) + 3;
    expect(c.countRequest(body, 'responses')).toBe(expected);
  });

  it('other APIs: prompt, else messages, else input', () => {
    c = counter('bpe');
    expect(c.countRequest({ prompt: 'San Francisco is a', input: 'ignored text here' }, 'other')).toBe(4);
    expect(c.countRequest({ messages: [{ role: 'user', content: 'Hello' }], input: 'x' }, 'other')).toBe(8);
    expect(c.countRequest({ input: 'San Francisco is a' }, 'other')).toBe(4);
    expect(c.countRequest({ input: ['San Francisco is a', 'Hello, world!'] }, 'other')).toBe(4 + n('Hello, world!'));
    expect(c.countRequest({ input: [[1, 2], [3]] }, 'other')).toBe(3);
    expect(c.countRequest({ model: 'm' }, 'other')).toBe(0);
  });

  it('countText counts generated text', () => {
    c = counter('bpe');
    expect(c.countText('San Francisco is a')).toBe(4);
  });
});

describe('chars estimator', () => {
  it('completions: ceil(chars / 4) over the prompt', () => {
    c = counter('chars');
    expect(c.countRequest({ prompt: 'San Francisco is a' }, 'completions')).toBe(5); // 18 chars
    expect(c.countRequest({ prompt: 'abcd' }, 'completions')).toBe(1);
    expect(c.countRequest({ prompt: ['abc', 'de'] }, 'completions')).toBe(2); // 5 chars
    expect(c.countRequest({ prompt: [[1, 2, 3]] }, 'completions')).toBe(3);
    expect(c.countRequest({ prompt: '' }, 'completions')).toBe(0);
  });

  it('chat: ceil(chars / 4) over <|im_start|>{role}\\n{content}<|im_end|>\\n per message', () => {
    c = counter('chars');
    const messages = [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'Hi' }];
    const rendered = messages.map((m) => `<|im_start|>${m.role}\n${m.content}<|im_end|>\n`).join('');
    expect(c.countRequest({ messages }, 'chat')).toBe(Math.ceil(rendered.length / 4));
    expect(Math.ceil(rendered.length / 4)).toBe(19); // 76 chars
  });

  it('chat: array content renders its text parts', () => {
    c = counter('chars');
    const body = { messages: [{ role: 'user', content: [{ type: 'text', text: 'ab' }, { type: 'text', text: 'cd' }] }] };
    expect(c.countRequest(body, 'chat')).toBe(Math.ceil('<|im_start|>user\nabcd<|im_end|>\n'.length / 4));
  });

  it('countText and stats', () => {
    c = counter('chars');
    expect(c.countText('San Francisco is a')).toBe(5);
    expect(c.stats).toEqual({ inline: 1, pooled: 0, fallbacks: 0, cacheHits: 0, cacheMisses: 0, cacheJoins: 0 });
  });
});
