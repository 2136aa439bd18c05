/**
 * Micro benchmark of where a large request body is parsed (docs/tokens.md#large-bodies): for
 * bodies of 16 KB to 8 MB, the event loop's time per body when it parses the body and builds its
 * prompt itself, against handing it to a tokenizer thread (api/thread-parse.ts) from an ordinary
 * buffer (copied into the thread's message) and from shared memory (as the front reads a body
 * announced at ROUTER_TOKENIZER_PARSE_MIN_BYTES or more). Event-loop time is
 * performance.eventLoopUtilization's active time over a run of bodies, one at a time; the round
 * trip is the wall time per body. The basis of ROUTER_TOKENIZER_PARSE_MIN_BYTES.
 *
 * Run: npm run build && node dist/bench/parse-offload-micro.js
 */
import { performance } from 'node:perf_hooks';
import { apiFor } from 'inference-router/api/api-registry';
import { ThreadParser } from 'inference-router/api/thread-parse';
import { createTokenCounter } from 'inference-router/tokens/create-token-counter';
import { parseTokenizerSettings } from 'inference-router/tokens/tokenizer-settings';
import { takesNoArguments } from './cli-args.js';
import { median } from './order-stats.js';
import { pictureDataUrl } from './scenarios.js';

takesNoArguments('Usage: node dist/bench/parse-offload-micro.js   (no options)');

const SIZES = [16_000, 64_000, 128_000, 256_000, 1_000_000, 2_000_000, 8_000_000];
const URL_PATH = '/v1/chat/completions';
const ROUNDS = 5;

/** A chat with a picture whose data URL makes the body about `bytes` long (the usual large body). */
function pictureChat(bytes: number): string {
  return JSON.stringify({
    model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 'What is in this picture?' }, { type: 'image_url', image_url: { url: pictureDataUrl(bytes) } }] }],
  });
}

function shared(text: string): Buffer {
  const b = Buffer.from(new SharedArrayBuffer(Buffer.byteLength(text)));
  b.write(text);
  return b;
}

/** Event-loop ms per body and wall ms per body, `n` bodies one after the other. */
async function measure(n: number, one: () => unknown): Promise<{ loopMs: number; wallMs: number }> {
  const e0 = performance.eventLoopUtilization();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await one();
  const wall = performance.now() - t0;
  const e = performance.eventLoopUtilization(e0);
  return { loopMs: e.active / n, wallMs: wall / n };
}

async function main(): Promise<void> {
  const counter = createTokenCounter(parseTokenizerSettings({}));
  await counter.ready();
  const threads = new ThreadParser(counter.threads!, 1);
  const api = apiFor(URL_PATH);
  const onLoop = (raw: Buffer): unknown => api.promptText(api.parse(raw, URL_PATH));
  const inThread = (raw: Buffer): Promise<unknown> => threads.parse(api, raw, URL_PATH);
  process.stdout.write('A chat with a picture as a data URL, one body at a time; event-loop ms per body (medians of 5 runs), and the round trip through the thread:\n\n');
  process.stdout.write('| body | on the event loop | thread, copied | thread, shared memory | event loop ÷ thread (shared) | round trip, shared |\n|---|---|---|---|---|---|\n');
  for (const size of SIZES) {
    const text = pictureChat(size);
    const plain = Buffer.from(text);
    const sharedBody = shared(text);
    const n = Math.max(5, Math.min(200, Math.round(40_000_000 / size)));
    for (let i = 0; i < 3; i++) { onLoop(plain); await inThread(plain); await inThread(sharedBody); }
    const loop: number[] = [];
    const copied: number[] = [];
    const viaShared: number[] = [];
    const trip: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      loop.push((await measure(n, () => onLoop(plain))).loopMs);
      copied.push((await measure(n, () => inThread(plain))).loopMs);
      const s = await measure(n, () => inThread(sharedBody));
      viaShared.push(s.loopMs);
      trip.push(s.wallMs);
    }
    const ms = (xs: number[]): string => median(xs).toFixed(3);
    process.stdout.write(`| ${(plain.length / 1000).toFixed(0)} KB | ${ms(loop)} | ${ms(copied)} | ${ms(viaShared)} | ${(median(loop) / median(viaShared)).toFixed(2)}× | ${ms(trip)} |\n`);
  }
  await counter.close();
}

main().catch((err: Error) => {
  process.stderr.write(`parse-offload-micro: ${err.stack ?? err.message}\n`);
  process.exit(1);
});
