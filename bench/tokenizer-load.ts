/**
 * p99 of small requests while large bodies arrive, each kind with the router's default against
 * the work done on the event loop. Interleaved A B A B, medians.
 *
 * - `--big prompt` (the default): prompts of 200 KB, with the tokenizer pool (default threshold)
 *   and without it (everything counted inline on the event loop).
 * - `--big image`: chats with a picture of `--big-bytes` (8 MB by default) as a base64 data URL,
 *   the body parsed in a tokenizer thread (the default from 256 KiB) and on the event loop
 *   (ROUTER_TOKENIZER_PARSE_MIN_BYTES=0).
 *
 * The large bodies go to a pod of their own (model sf-model-long) that drops them unread
 * (targets.ts startBodySink): the small requests' mock is not held up by them, and no mock's parse
 * of them loads the machine's two CPUs beside the router's.
 *
 *   npm run build && node dist/bench/tokenizer-load.js [--big prompt|image] [--big-bytes N] [--rounds 3] [--seconds 5]
 */
import { request } from 'node:http';
import { runAutocannon } from './load-autocannon.js';
import { openLoopBinary, runOpenLoop } from './load-open-loop.js';
import { readCommandLine, UsageError, type CommandSpec } from './cli-args.js';
import { pictureDataUrl, routerResources } from './scenarios.js';
import { median } from './order-stats.js';
import { startBodySink, startMock, startRouter, stopAll, type Target } from './targets.js';
import { stopChildrenOnInterrupt } from './interrupt.js';

const COMMAND: CommandSpec = {
  usage: 'Usage: node dist/bench/tokenizer-load.js [--big prompt|image] [--big-bytes N] [--load open-loop|autocannon] [--rate N] [--rounds N] [--seconds S] [--big-per-second N]',
  values: ['--rounds', '--seconds', '--big-per-second', '--big', '--big-bytes', '--load', '--rate'],
};
const { ROUNDS, SECONDS, BIG_PER_SECOND, BIG, BIG_BYTES, LOAD, RATE } = readCommandLine(COMMAND, (line) => ({
  ROUNDS: line.positiveNumber('--rounds') ?? 3,
  SECONDS: line.positiveNumber('--seconds') ?? 5,
  BIG_PER_SECOND: line.positiveNumber('--big-per-second') ?? 4,
  BIG: bigOption(line.value('--big')),
  BIG_BYTES: line.positiveNumber('--big-bytes') ?? 8_000_000,
  LOAD: loadOption(line.value('--load')),
  RATE: line.positiveNumber('--rate') ?? 1000,
}));

/** A small request this slow or slower is counted, with the episodes it came in (open-loop). */
const SLOW_MS = 5;

function loadOption(value: string | undefined): 'open-loop' | 'autocannon' {
  if (value === undefined || value === 'open-loop' || value === 'autocannon') return value ?? 'open-loop';
  throw new UsageError(`--load is open-loop or autocannon, not "${value}"`);
}

function bigOption(value: string | undefined): 'prompt' | 'image' {
  if (value === undefined || value === 'prompt' || value === 'image') return value ?? 'prompt';
  throw new UsageError(`--big is prompt or image, not "${value}"`);
}

const WORDS = ['model', 'router', 'token', 'inference', 'latency', 'budget', 'window', 'request', 'stream', 'answer', 'prompt', 'queue'];
function bigPrompt(bytes: number): string {
  let s = '';
  let i = 0;
  // Pseudo-random words: realistic BPE cost (each distinct-ish word is a few tokens).
  while (s.length < bytes) {
    i = (i * 1103515245 + 12345) & 0x7fffffff;
    s += `${WORDS[i % WORDS.length]}${i % 97} `;
  }
  return s;
}

interface BigKind {
  readonly path: string;
  /** The `n`th large body. */
  body(n: number): Buffer;
  readonly describe: string;
  readonly variants: readonly { readonly name: string; readonly env: NodeJS.ProcessEnv }[];
}

function bigKind(): BigKind {
  const prompt = bigPrompt(200 * 1024);
  if (BIG === 'image') {
    const body = Buffer.from(JSON.stringify({
      model: 'sf-model-long',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'What is in this picture?' }, { type: 'image_url', image_url: { url: pictureDataUrl(BIG_BYTES) } }] }],
    }));
    return {
      path: '/v1/chat/completions', body: () => body, describe: `chats with a picture of ${(body.length / 1e6).toFixed(1)} MB`,
      variants: [
        { name: 'body parsed in a tokenizer thread (default)', env: {} },
        { name: 'body parsed on the event loop', env: { ROUTER_TOKENIZER_PARSE_MIN_BYTES: '0' } },
      ],
    };
  }
  return {
    // Each prompt its own (a number first): the same text again would be counted once and then
    // found in the cache of repeated texts (docs/tokens.md#repeated-texts), on either side.
    path: '/v1/completions', body: (n) => Buffer.from(JSON.stringify({ model: 'sf-model-long', prompt: `Document ${n}: ${prompt}` })), describe: 'prompts of 200 KB, each a new one',
    variants: [
      { name: 'with pool (inline ≤ 512 chars)', env: {} },
      { name: 'without pool (all inline)', env: { ROUTER_TOKENIZER_INLINE_MAX_CHARS: '1000000' } },
    ],
  };
}

/** Large bodies made so far, over every round and variant: no number comes twice. */
let bodiesMade = 0;

/** Sends one big body every 1/rate s until stopped (a separate HTTP client, not autocannon). */
function bigSender(url: string, path: string, bodyOf: (n: number) => Buffer, rate: number): () => Promise<number> {
  let sent = 0;
  let inflight = 0;
  const u = new URL(`${url}${path}`);
  const timer = setInterval(() => {
    inflight++;
    const body = bodyOf(bodiesMade++);
    const req = request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': body.length } }, (res) => {
      res.resume();
      res.on('end', () => { inflight--; sent++; });
    });
    req.on('error', () => { inflight--; });
    req.end(body);
  }, 1000 / rate);
  return async () => {
    clearInterval(timer);
    while (inflight > 0) await new Promise((r) => setTimeout(r, 20));
    return sent;
  };
}


async function main(): Promise<void> {
  stopChildrenOnInterrupt('tokenizer-load');
  let openLoop: string | null = null;
  if (LOAD === 'open-loop') {
    const b = openLoopBinary();
    if (!('bin' in b)) throw new Error(`--load open-loop: ${b.reason} (--load autocannon runs without it)`);
    openLoop = b.bin;
  }
  const mock = await startMock('pod-a');
  const bigMock = await startBodySink('pod-long');
  const kind = bigKind();
  const variants = kind.variants;
  const small = JSON.stringify({ model: 'sf-model', prompt: 'San Francisco is a' });
  const routers: Target[] = [];
  for (const v of variants) routers.push(await startRouter(v.name, routerResources(mock.port, bigMock.port, { kind: 'none' }), 2, { ACCESS_LOG_ENABLED: 'false', ...v.env }));
  const p99: number[][] = variants.map(() => []);
  const p50: number[][] = variants.map(() => []);
  const rps: number[][] = variants.map(() => []);
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < variants.length; i++) {
      const stopBig = bigSender(routers[i].url, kind.path, kind.body, BIG_PER_SECOND);
      const spec = { url: `${routers[i].url}/v1/completions`, bodies: [small], connections: 16, durationS: SECONDS, rate: RATE };
      const r = openLoop === null ? await runAutocannon(spec) : await runOpenLoop(openLoop, spec, 'poisson', SLOW_MS);
      const slow = r.slow === undefined ? '' : `; ${r.slow.requests} requests of ${SLOW_MS} ms or more in ${r.slow.episodes} episodes`;
      const bigSent = await stopBig();
      p99[i].push(r.latencyMs.p99);
      p50[i].push(r.latencyMs.p50);
      rps[i].push(r.rps);
      process.stderr.write(`round ${round + 1} ${variants[i].name}: small p50 ${r.latencyMs.p50.toFixed(2)} ms p99 ${r.latencyMs.p99.toFixed(2)} ms, ${r.rps.toFixed(0)} req/s${slow}; large bodies answered ${bigSent}\n`);
    }
  }
  const how = openLoop === null ? 'autocannon' : 'open-loop, Poisson arrivals';
  process.stdout.write(`\nSmall requests at ${RATE} req/s (${how}, 16 connections) while ${BIG_PER_SECOND} ${kind.describe} arrive per second (to a pod of their own that drops them unread); 2 workers; ${ROUNDS} interleaved rounds of ${SECONDS} s, medians (min–max):\n\n`);
  process.stdout.write('| variant | small p50 ms | small p99 ms | req/s |\n|---|---|---|---|\n');
  for (let i = 0; i < variants.length; i++) {
    const f = (x: number): string => (Number.isInteger(x) ? String(x) : x.toFixed(2));
    const range = (xs: number[]) => `${f(median(xs))} (${f(Math.min(...xs))}–${f(Math.max(...xs))})`;
    process.stdout.write(`| ${variants[i].name} | ${range(p50[i])} | ${range(p99[i])} | ${median(rps[i]).toFixed(0)} |\n`);
  }
  process.stdout.write(`\np99 ratio, ${variants[1].name} / ${variants[0].name}: ${(median(p99[1]) / median(p99[0])).toFixed(2)}×\n`);
  await stopAll();
}

main().catch(async (err: Error) => {
  process.stderr.write(`tokenizer-load: ${err.stack ?? err.message}\n`);
  await stopAll();
  process.exit(1);
});
