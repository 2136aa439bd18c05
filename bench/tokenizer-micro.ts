/**
 * Micro benchmark of input-token counting (docs/tokens.md):
 *  1. by prompt size: the event-loop cost of an inline count versus a pooled one (event-loop
 *     active time per task, from performance.eventLoopUtilization), the pool's round-trip latency,
 *     and the crossover - the size above which counting inline costs the event loop more than
 *     handing the prompt to the pool (the basis of ROUTER_TOKENIZER_INLINE_MAX_CHARS);
 *  2. inline counts for 100 B, 300 B, 2 KB and 20 KB prompts, of English-like text and of
 *     never-seen random words (each one a BPE merge, the worst case for natural-looking text);
 *  3. hostile prompts through the pool: result and whether the budget fallback was used.
 *
 * Run: npm run build && node dist/bench/tokenizer-micro.js
 * Env: ROUTER_TOKENIZER_POOL_SIZE / _BUDGET_MS as for the router.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { median } from './order-stats.js';
import { createTokenCounter, type RouterTokenCounter } from 'inference-router/tokens/create-token-counter';
import { DEFAULT_INLINE_MAX_CHARS, parseTokenizerSettings } from 'inference-router/tokens/tokenizer-settings';
import { extractPromptText } from 'inference-router/api/openai-prompt';
import { takesNoArguments } from './cli-args.js';
import { mulberry32 } from '../test/helpers/mulberry32.js';

takesNoArguments('Usage: node dist/bench/tokenizer-micro.js   (no options)');

const VOCABULARY = ('the of and to a in is it you that he was for on are with as I his they be at one have this from or had by ' +
  'word but what some we can out other were all there when up use your how said an each she which do their time if will way ' +
  'about many then them write would like so these her long make thing see him two has look more day could go come did number ' +
  'sound no most people my over know water than call first who may down side been now find any new work part take get place ' +
  'made live where after back little only round man year came show every good me give our under name very through just form ' +
  'sentence great think say help low line differ turn cause much mean before move right boy old too same tell does set three ' +
  'want air well also play small end put home read hand port large spell add even land here must big high such follow act why ' +
  'ask men change went light kind off need house picture try us again animal point mother world near build self earth father ' +
  'model router token request latency throughput backend inference prompt completion').split(' ');
const SEPARATORS = [' ', ' ', ' ', ' ', ' ', ' ', ', ', '. ', '.\n', '? ', ': ', ' (', ') ', '\n\n', ' "', '" '];

function english(chars: number, seed: number): string {
  const r = mulberry32(seed);
  let s = '';
  while (s.length < chars) {
    const w = VOCABULARY[Math.floor(r() * VOCABULARY.length)];
    s += r() < 0.08 ? w[0].toUpperCase() + w.slice(1) : w;
    s += SEPARATORS[Math.floor(r() * SEPARATORS.length)];
  }
  return s.slice(0, chars);
}

/** Words of random letters: every one new to the merge cache (worst realistic case). */
let coldSeed = 1;
function cold(chars: number): string {
  const r = mulberry32(coldSeed++);
  let s = '';
  while (s.length < chars) {
    const n = 2 + Math.floor(r() * 8);
    for (let i = 0; i < n; i++) s += String.fromCharCode(97 + Math.floor(r() * 26));
    s += ' ';
  }
  return s.slice(0, chars);
}

const fmt = (n: number, d = 1): string => n.toFixed(d).padStart(9);

/** Median over 5 rounds of the mean µs of event-loop time per inline count of prompts made by `make`. */
function inlineUs(counter: RouterTokenCounter, chars: number, make: (chars: number, i: number) => string): number {
  const isCold = make === cold;
  const prompts = Array.from({ length: 64 }, (_, i) => make(chars, i + 1));
  for (const p of prompts) counter.countPrompt(extractPromptText({ prompt: p }, 'completions')); // warm-up
  const iterations = Math.max(16, Math.min(5_000, Math.round((isCold ? 100_000 : 1_000_000) / chars)));
  const rounds: number[] = [];
  for (let round = 0; round < 5; round++) {
    const batch = isCold ? Array.from({ length: iterations }, () => cold(chars)) : null;
    const t0 = performance.now();
    for (let i = 0; i < iterations; i++) {
      counter.countPrompt(extractPromptText({ prompt: batch === null ? prompts[i & 63] : batch[i] }, 'completions'));
    }
    rounds.push(((performance.now() - t0) * 1000) / iterations);
  }
  return median(rounds);
}

interface PoolCost {
  /** µs of event-loop active time per pooled task (submit, clone, answer). */
  loopUs: number;
  /** Median round trip (1 in flight), µs. */
  roundTripUs: number;
}

async function poolCost(counter: RouterTokenCounter, chars: number): Promise<PoolCost> {
  const prompts = Array.from({ length: 32 }, (_, i) => english(chars, 1000 + i));
  // Round trip, one in flight.
  const trips: number[] = [];
  for (let i = 0; i < 200; i++) {
    const t0 = performance.now();
    await counter.countPrompt(extractPromptText({ prompt: prompts[i & 31] }, 'completions'));
    trips.push((performance.now() - t0) * 1000);
  }
  // Event-loop time, 32 in flight (the loop is idle while the thread works); median of 5 rounds.
  const rounds: number[] = [];
  for (let round = 0; round < 5; round++) {
    const tasks = 640;
    const elu0 = performance.eventLoopUtilization();
    for (let done = 0; done < tasks; done += 32) {
      const batch: Array<number | Promise<number>> = [];
      for (let i = 0; i < 32; i++) batch.push(counter.countPrompt(extractPromptText({ prompt: prompts[i] }, 'completions')));
      await Promise.all(batch);
    }
    rounds.push((performance.eventLoopUtilization(elu0).active * 1000) / tasks);
  }
  return { loopUs: median(rounds), roundTripUs: median(trips) };
}

async function main(): Promise<void> {
  const env = process.env;
  const inline = createTokenCounter(parseTokenizerSettings({ ROUTER_TOKENIZER_POOL_SIZE: '0', ROUTER_TOKENIZER_INLINE_MAX_CHARS: '1000000' }));
  const pooled = createTokenCounter(parseTokenizerSettings({ ...env, ROUTER_TOKENIZER_INLINE_MAX_CHARS: '0', ROUTER_TOKENIZER_BUDGET_MS: '60000' }));
  await pooled.ready();

  console.log('1. Pool versus inline by prompt size (english text): event-loop µs per count');
  console.log('   chars   inline µs   pool loop µs   pool round trip µs');
  let crossover = 0;
  for (const chars of [128, 256, 512, 768, 1024, 1536, 2048, 4096, 20_480]) {
    const i = inlineUs(inline, chars, english);
    const p = await poolCost(pooled, chars);
    if (crossover === 0 && i >= p.loopUs) crossover = chars;
    console.log(`   ${String(chars).padStart(5)}${fmt(i, 1)}${fmt(p.loopUs, 1).padStart(15)}${fmt(p.roundTripUs, 0).padStart(21)}`);
  }
  console.log(`   crossover: inline costs the event loop more than the pool from about ${crossover} characters`);
  if (pooled.stats.fallbacks !== 0) console.log(`   (warning: ${pooled.stats.fallbacks} pooled counts fell back)`);

  console.log('\n2. Inline o200k_base count (µs of event-loop time per prompt)');
  console.log('   prompt      english      cold');
  for (const [label, chars] of [['100 B', 100], ['300 B', 300], ['2 KB', 2048], ['20 KB', 20_480]] as const) {
    console.log(`   ${label.padEnd(6)}${fmt(inlineUs(inline, chars, english))}${fmt(inlineUs(inline, chars, cold))}`);
  }
  const worst = inlineUs(inline, DEFAULT_INLINE_MAX_CHARS, cold);
  console.log(`   worst inline stall at the default threshold (${DEFAULT_INLINE_MAX_CHARS} chars of unseen words): ${worst.toFixed(0)} µs`);

  console.log('\n3. Hostile prompts through the pool (default budget)');
  const guarded = createTokenCounter(parseTokenizerSettings({ ...env, ROUTER_TOKENIZER_INLINE_MAX_CHARS: '0' }));
  await guarded.ready();
  for (const [label, prompt] of [
    ['200 KB of "a"', 'a'.repeat(200_000)],
    ['200 KB of spaces', ' '.repeat(200_000)],
    ['200 KB random base64', randomBytes(150_000).toString('base64')],
    ['2 MB random base64', randomBytes(1_500_000).toString('base64')],
  ] as const) {
    const before = guarded.stats.fallbacks;
    const elu0 = performance.eventLoopUtilization();
    const t0 = performance.now();
    const n = await guarded.countPrompt(extractPromptText({ prompt }, 'completions'));
    const ms = performance.now() - t0;
    const elu = performance.eventLoopUtilization(elu0);
    const how = guarded.stats.fallbacks > before ? 'chars fallback (budget)' : 'bpe';
    console.log(`   ${label.padEnd(22)} ${String(n).padStart(8)} tokens  ${how.padEnd(24)} answered in ${ms.toFixed(0)} ms, event loop busy ${(elu.active * 1000).toFixed(0)} µs`);
  }

  await Promise.all([inline.close(), pooled.close(), guarded.close()]);
}

await main();
