/**
 * Token-counting settings from the environment, validated once and frozen (docs/tokens.md).
 */
import { alternatives, badSetting } from '../setting-message.js';

export type TokenEstimator = 'bpe' | 'chars';

export interface TokenizerSettings {
  /** `bpe`: real o200k_base count; `chars`: ceil(characters / 4). */
  readonly estimator: TokenEstimator;
  /** Prompts with at most this many characters are counted on the event loop; longer ones go to the pool. */
  readonly inlineMaxChars: number;
  /** Tokenizer worker threads per router process; 0 = no pool (long prompts use the chars estimate). */
  readonly poolSize: number;
  /** Pooled tasks allowed to wait for a thread; beyond it the chars estimate is used. */
  readonly queue: number;
  /** Time budget of one pooled count (queue wait included); beyond it the chars estimate is used. */
  readonly budgetMs: number;
  /** Characters of repeated long texts whose counts each process keeps (count-cache.ts); 0 = no cache. */
  readonly cacheChars: number;
  /**
   * Request bodies of at least this many bytes are parsed in a tokenizer thread instead of on the
   * event loop (api/thread-parse.ts); 0 = every body on the event loop.
   */
  readonly parseMinBytes: number;
  /**
   * Memory for the long conversations kept (api/conversation-memo.ts), per event loop and per
   * tokenizer thread; 0 = none.
   */
  readonly conversationBytes: number;
}

/**
 * Measured with bench/tokenizer-micro.ts (docs/internals/tokens.md): from about 512 characters of prose, an inline count costs
 * the event loop more than handing the prompt to the pool and taking the answer back.
 */
export const DEFAULT_INLINE_MAX_CHARS = 512;
export const DEFAULT_POOL_SIZE = 1;
export const DEFAULT_QUEUE = 64;
export const DEFAULT_BUDGET_MS = 200;
/** About 4 MB of one-byte text per process (twice that for text beyond Latin-1), in two generations. */
export const DEFAULT_CACHE_CHARS = 4_000_000;
/**
 * Measured with bench/parse-offload-micro.ts (docs/tokens.md#large-bodies): at 256 KB the
 * hand-off costs the event loop a sixth of parsing the body there, at 8 MB a seventieth; at 16 KB
 * twice the parse, and up to 128 KB the parse is short enough that the round trip would only add
 * to the request's own time.
 */
export const DEFAULT_PARSE_MIN_BYTES = 262_144;
/**
 * 24 MiB: the bench's long conversation (scenario 9c, 34-39 KB a turn) is charged about 110 KB a
 * conversation, so a worker keeps the latest turns of about 200 such conversations at once
 * (docs/tokens.md#long-conversations).
 */
export const DEFAULT_CONVERSATION_BYTES = 25_165_824;

const ESTIMATORS: readonly TokenEstimator[] = ['bpe', 'chars'];

function estimator(env: NodeJS.ProcessEnv): TokenEstimator {
  const raw = env.ROUTER_TOKEN_ESTIMATOR;
  if (raw === undefined || raw === '') return 'bpe';
  if ((ESTIMATORS as readonly string[]).includes(raw)) return raw as TokenEstimator;
  throw new Error(badSetting('ROUTER_TOKEN_ESTIMATOR', alternatives(ESTIMATORS), raw));
}

function integer(env: NodeJS.ProcessEnv, name: string, min: number, max: number, dflt: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return dflt;
  const n = /^[0-9]+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new Error(badSetting(name, `an integer from ${min} to ${max}`, raw));
  }
  return n;
}

/**
 * Reads ROUTER_TOKEN_ESTIMATOR, ROUTER_TOKENIZER_INLINE_MAX_CHARS, ROUTER_TOKENIZER_POOL_SIZE,
 * ROUTER_TOKENIZER_QUEUE, ROUTER_TOKENIZER_BUDGET_MS, ROUTER_TOKENIZER_CACHE_CHARS,
 * ROUTER_TOKENIZER_PARSE_MIN_BYTES and ROUTER_TOKENIZER_CONVERSATION_BYTES. Throws an Error naming the variable on a bad value.
 */
export function parseTokenizerSettings(env: NodeJS.ProcessEnv): TokenizerSettings {
  return Object.freeze({
    estimator: estimator(env),
    inlineMaxChars: integer(env, 'ROUTER_TOKENIZER_INLINE_MAX_CHARS', 0, 1_000_000, DEFAULT_INLINE_MAX_CHARS),
    poolSize: integer(env, 'ROUTER_TOKENIZER_POOL_SIZE', 0, 16, DEFAULT_POOL_SIZE),
    queue: integer(env, 'ROUTER_TOKENIZER_QUEUE', 0, 10_000, DEFAULT_QUEUE),
    budgetMs: integer(env, 'ROUTER_TOKENIZER_BUDGET_MS', 1, 60_000, DEFAULT_BUDGET_MS),
    cacheChars: integer(env, 'ROUTER_TOKENIZER_CACHE_CHARS', 0, 1_000_000_000, DEFAULT_CACHE_CHARS),
    parseMinBytes: integer(env, 'ROUTER_TOKENIZER_PARSE_MIN_BYTES', 0, 1_000_000_000, DEFAULT_PARSE_MIN_BYTES),
    conversationBytes: integer(env, 'ROUTER_TOKENIZER_CONVERSATION_BYTES', 0, 4_294_967_296, DEFAULT_CONVERSATION_BYTES),
  });
}
