/**
 * Micro benchmark of pod choice (docs/benchmarks.md): one Scheduler pick among 100 pods with
 * scraped metrics, in-flight counts and a warm prefix memory, with the default scorers; the
 * prefix hashing of a 100k-token (~400k characters) prompt; and least-in-flight for comparison.
 *
 * Run: npm run build && node dist/bench/scheduler-micro.js
 */
import { performance } from 'node:perf_hooks';
import { pickLeastInflight } from './least-inflight.js';
import { PodScorer } from 'inference-router/pick/pod-scorer';
import { prefixBlockHashes } from 'inference-router/pick/prefix-hashes';
import { PrefixStore } from 'inference-router/pick/prefix-store';
import { DEFAULT_SCHEDULER_CONFIG } from 'inference-router/pick/scheduler-config';
import { textPrompt } from 'inference-router/tokens/prompt-text';
import type { EndpointState } from 'inference-router/upstream/endpoint-registry';
import { PodHealth } from 'inference-router/upstream/pod-health';
import { PodLoad } from 'inference-router/upstream/pod-load';
import { takesNoArguments } from './cli-args.js';

takesNoArguments('Usage: node dist/bench/scheduler-micro.js   (no options)');

const PODS = 100;
const NOW = 1e12;

function pods(): EndpointState[] {
  return Array.from({ length: PODS }, (_, i) => {
    const load = Object.assign(new PodLoad(), {
      waiting: i % 7, running: i % 11, kvUsage: (i % 10) / 10, ttftMs: 50 + (i % 13) * 10, tpotMs: 20, scrapedUntil: NOW * 2,
      otherInflight: i % 5, sharedUntil: NOW * 2, observedMs: 80,
    });
    return { name: `pod-${i}`, key: `pod-${i}`, inflight: i % 3, load, health: new PodHealth() } as unknown as EndpointState;
  });
}

function time(name: string, n: number, fn: (i: number) => unknown): number {
  for (let i = 0; i < Math.min(n, 50_000); i++) fn(i);
  const t0 = performance.now();
  let sink = 0;
  for (let i = 0; i < n; i++) if (fn(i) !== null) sink++;
  const us = ((performance.now() - t0) * 1000) / n;
  if (sink === 0) throw new Error('nothing picked');
  console.log(`${name.padEnd(62)} ${us.toFixed(3).padStart(8)} µs`);
  return us;
}

const list = pods();
const scorer = new PodScorer(DEFAULT_SCHEDULER_CONFIG);
const store = new PrefixStore(DEFAULT_SCHEDULER_CONFIG.prefixCapacity);
const hashes = new Uint32Array(DEFAULT_SCHEDULER_CONFIG.prefixMaxBlocks);
const system = 'You are a helpful assistant for an online shop. Answer briefly. '.repeat(40);
const prompts = Array.from({ length: 64 }, (_, i) => textPrompt(`${system}\nUser ${i}: where is my order number ${i * 7919}?`));
// Warm prefix memory: every prompt served once by some pod.
for (let i = 0; i < prompts.length; i++) store.record(hashes, prefixBlockHashes(prompts[i], 256, hashes), list[i % PODS]);
const hashed = prompts.map((p) => {
  const h = new Uint32Array(hashes.length);
  return { h, n: prefixBlockHashes(p, 256, h) };
});

console.log(`pod choice among ${PODS} pods (Node ${process.version})`);
time('least-in-flight (before)', 2_000_000, () => pickLeastInflight(list, null, Math.random, NOW));
const scoring = time('default scorers, prefix hashes ready (the scoring path)', 1_000_000, (i) => {
  const x = hashed[i & 63];
  return scorer.pick(list, null, NOW, store, x.h, x.n, Math.random);
});
time('default scorers + hashing a 2.7k-char prompt', 500_000, (i) => {
  const n = prefixBlockHashes(prompts[i & 63], 256, hashes);
  return scorer.pick(list, null, NOW, store, hashes, n, Math.random);
});
const big = textPrompt('lorem ipsum dolor sit amet '.repeat(15_000)); // ~405k chars ≈ 100k tokens
time('prefix hashing of a 100k-token prompt (first 64 blocks)', 100_000, () => prefixBlockHashes(big, 256, hashes) > 0 ? 1 : null);
console.log(scoring <= 5 ? `scoring path ${scoring.toFixed(2)} µs: within the 5 µs goal` : `scoring path ${scoring.toFixed(2)} µs: OVER the 5 µs goal`);
