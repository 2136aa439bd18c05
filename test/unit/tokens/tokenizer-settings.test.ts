import { describe, expect, it } from 'vitest';
import {
  DEFAULT_BUDGET_MS, DEFAULT_CACHE_CHARS, DEFAULT_CONVERSATION_BYTES, DEFAULT_INLINE_MAX_CHARS, DEFAULT_PARSE_MIN_BYTES, DEFAULT_POOL_SIZE, DEFAULT_QUEUE, parseTokenizerSettings,
} from '../../../src/tokens/tokenizer-settings.js';

describe('tokenizer settings', () => {
  it('defaults, frozen', () => {
    const s = parseTokenizerSettings({});
    expect(s).toEqual({
      estimator: 'bpe', inlineMaxChars: DEFAULT_INLINE_MAX_CHARS, poolSize: DEFAULT_POOL_SIZE, queue: DEFAULT_QUEUE, budgetMs: DEFAULT_BUDGET_MS,
      cacheChars: DEFAULT_CACHE_CHARS, parseMinBytes: DEFAULT_PARSE_MIN_BYTES, conversationBytes: DEFAULT_CONVERSATION_BYTES,
    });
    expect(DEFAULT_PARSE_MIN_BYTES).toBe(262_144);
    expect(DEFAULT_CONVERSATION_BYTES).toBe(24 * 1024 * 1024);
    expect(Object.isFrozen(s)).toBe(true);
    expect(parseTokenizerSettings({ ROUTER_TOKEN_ESTIMATOR: '' }).estimator).toBe('bpe');
  });

  it('reads every variable', () => {
    expect(parseTokenizerSettings({
      ROUTER_TOKEN_ESTIMATOR: 'chars',
      ROUTER_TOKENIZER_INLINE_MAX_CHARS: '0',
      ROUTER_TOKENIZER_POOL_SIZE: '2',
      ROUTER_TOKENIZER_QUEUE: '8',
      ROUTER_TOKENIZER_BUDGET_MS: '50',
      ROUTER_TOKENIZER_CACHE_CHARS: '0',
      ROUTER_TOKENIZER_PARSE_MIN_BYTES: '0',
      ROUTER_TOKENIZER_CONVERSATION_BYTES: '0',
    })).toEqual({ estimator: 'chars', inlineMaxChars: 0, poolSize: 2, queue: 8, budgetMs: 50, cacheChars: 0, parseMinBytes: 0, conversationBytes: 0 });
    expect(parseTokenizerSettings({ ROUTER_TOKENIZER_CONVERSATION_BYTES: '4294967296' }).conversationBytes).toBe(4_294_967_296);
    expect(parseTokenizerSettings({ ROUTER_TOKENIZER_PARSE_MIN_BYTES: '1048576' }).parseMinBytes).toBe(1_048_576);
  });

  it.each([
    ['ROUTER_TOKEN_ESTIMATOR', 'tiktoken', /^ROUTER_TOKEN_ESTIMATOR: expected bpe or chars; got "tiktoken"$/],
    ['ROUTER_TOKEN_ESTIMATOR', 'BPE', /ROUTER_TOKEN_ESTIMATOR/],
    ['ROUTER_TOKENIZER_INLINE_MAX_CHARS', '-1', /^ROUTER_TOKENIZER_INLINE_MAX_CHARS: expected an integer from 0 to 1000000; got "-1"$/],
    ['ROUTER_TOKENIZER_INLINE_MAX_CHARS', '1.5', /ROUTER_TOKENIZER_INLINE_MAX_CHARS/],
    ['ROUTER_TOKENIZER_POOL_SIZE', '17', /^ROUTER_TOKENIZER_POOL_SIZE: expected an integer from 0 to 16; got "17"$/],
    ['ROUTER_TOKENIZER_POOL_SIZE', 'two', /ROUTER_TOKENIZER_POOL_SIZE/],
    ['ROUTER_TOKENIZER_QUEUE', '1e3', /^ROUTER_TOKENIZER_QUEUE: expected an integer from 0 to 10000; got "1e3"$/],
    ['ROUTER_TOKENIZER_BUDGET_MS', '0', /^ROUTER_TOKENIZER_BUDGET_MS: expected an integer from 1 to 60000; got "0"$/],
    ['ROUTER_TOKENIZER_BUDGET_MS', ' 200', /ROUTER_TOKENIZER_BUDGET_MS/],
    ['ROUTER_TOKENIZER_CACHE_CHARS', '-5', /^ROUTER_TOKENIZER_CACHE_CHARS: expected an integer from 0 to 1000000000; got "-5"$/],
    ['ROUTER_TOKENIZER_CACHE_CHARS', '4MB', /ROUTER_TOKENIZER_CACHE_CHARS/],
    ['ROUTER_TOKENIZER_PARSE_MIN_BYTES', '256KiB', /^ROUTER_TOKENIZER_PARSE_MIN_BYTES: expected an integer from 0 to 1000000000; got "256KiB"$/],
    ['ROUTER_TOKENIZER_PARSE_MIN_BYTES', '-1', /ROUTER_TOKENIZER_PARSE_MIN_BYTES/],
    ['ROUTER_TOKENIZER_CONVERSATION_BYTES', '24MiB', /^ROUTER_TOKENIZER_CONVERSATION_BYTES: expected an integer from 0 to 4294967296; got "24MiB"$/],
    ['ROUTER_TOKENIZER_CONVERSATION_BYTES', '4294967297', /ROUTER_TOKENIZER_CONVERSATION_BYTES/],
  ])('%s=%j is rejected', (name, value, message) => {
    expect(() => parseTokenizerSettings({ [name]: value })).toThrow(message);
  });
});
