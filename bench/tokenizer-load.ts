/**
 * p99 of small requests while 200 KB prompts arrive, with the tokenizer pool (default threshold)
 * and without it (everything counted inline on the event loop). Interleaved A B A B, medians.
 *
 *   npm run build && node dist/bench/tokenizer-load.js [--rounds 3] [--seconds 5]
 */
import { request } from 'node:http';
import { runAutocannon } from './load-autocannon.js';
import { readCommandLine, type CommandSpec } from './cli-args.js';
import { routerResources } from './scenarios.js';
import { median } from './order-stats.js';
import { startMock, startRouter, stopAll, type Target } from './targets.js';
import { stopChildrenOnInterrupt } from './interrupt.js';

const COMMAND: CommandSpec = {
  usage: 'Usage: node dist/bench/tokenizer-load.js [--rounds N] [--seconds S] [--big-per-second N]',
  values: ['--rounds', '--seconds', '--big-per-second'],
};
const { ROUNDS, SECONDS, BIG_PER_SECOND } = readCommandLine(COMMAND, (line) => ({
  ROUNDS: line.positiveNumber('--rounds') ?? 3,
  SECONDS: line.positiveNumber('--seconds') ?? 5,
  BIG_PER_SECOND: line.positiveNumber('--big-per-second') ?? 4,
}));

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

/** Sends one big prompt every 1/rate s until stopped (a separate HTTP client, not autocannon). */
function bigSender(url: string, body: Buffer, rate: number): () => Promise<number> {
  let sent = 0;
  let inflight = 0;
  const u = new URL(`${url}/v1/completions`);
  const timer = setInterval(() => {
    inflight++;
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
  const mock = await startMock('pod-a');
  const big = Buffer.from(JSON.stringify({ model: 'sf-model', prompt: bigPrompt(200 * 1024) }));
  const small = JSON.stringify({ model: 'sf-model', prompt: 'San Francisco is a' });
  const variants: { name: string; env: NodeJS.ProcessEnv }[] = [
    { name: 'with pool (inline ≤ 512 chars)', env: {} },
    { name: 'without pool (all inline)', env: { ROUTER_TOKENIZER_INLINE_MAX_CHARS: '1000000' } },
  ];
  const routers: Target[] = [];
  for (const v of variants) routers.push(await startRouter(v.name, routerResources(mock.port, mock.port, { kind: 'none' }), 2, { ACCESS_LOG_ENABLED: 'false', ...v.env }));
  const p99: number[][] = variants.map(() => []);
  const p50: number[][] = variants.map(() => []);
  const rps: number[][] = variants.map(() => []);
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < variants.length; i++) {
      const stopBig = bigSender(routers[i].url, big, BIG_PER_SECOND);
      const r = await runAutocannon({ url: `${routers[i].url}/v1/completions`, bodies: [small], connections: 16, durationS: SECONDS, rate: 1000 });
      const bigSent = await stopBig();
      p99[i].push(r.latencyMs.p99);
      p50[i].push(r.latencyMs.p50);
      rps[i].push(r.rps);
      process.stderr.write(`round ${round + 1} ${variants[i].name}: small p50 ${r.latencyMs.p50} ms p99 ${r.latencyMs.p99} ms, ${r.rps.toFixed(0)} req/s; big prompts answered ${bigSent}\n`);
    }
  }
  process.stdout.write(`\nSmall requests at 1000 req/s (16 connections) while ${BIG_PER_SECOND} prompts of 200 KB arrive per second; 2 workers; ${ROUNDS} interleaved rounds of ${SECONDS} s, medians (min–max):\n\n`);
  process.stdout.write('| variant | small p50 ms | small p99 ms | req/s |\n|---|---|---|---|\n');
  for (let i = 0; i < variants.length; i++) {
    const range = (xs: number[]) => `${median(xs)} (${Math.min(...xs)}–${Math.max(...xs)})`;
    process.stdout.write(`| ${variants[i].name} | ${range(p50[i])} | ${range(p99[i])} | ${median(rps[i]).toFixed(0)} |\n`);
  }
  process.stdout.write(`\np99 ratio without/with pool: ${(median(p99[1]) / median(p99[0])).toFixed(2)}×\n`);
  await stopAll();
}

main().catch(async (err: Error) => {
  process.stderr.write(`tokenizer-load: ${err.stack ?? err.message}\n`);
  await stopAll();
  process.exit(1);
});
