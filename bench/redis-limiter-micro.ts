/**
 * Micro benchmark of a global-mode rate limit decision (RedisLimiter: the operations of one
 * event-loop turn go to Redis as one EVALSHA of the batch script per route) against a
 * redis-server this benchmark starts on a free loopback port:
 *  1. sequential: one decision in flight (round-trip latency);
 *  2. 100 decisions in flight over 64 routes (small batches);
 *  3. 100 decisions in flight on one route (one batch per turn);
 *  4. the full request cycle (admit, then settle: output charge + input correction), 100 in
 *     flight over 64 routes, and on one route. As in the router, a request does not wait for its
 *     settle (the answer goes out first; a settle rides with a later admission of its route, at
 *     most SETTLE_WAIT_MS later): the latency is the admission's, and the time includes every
 *     settle having landed.
 * Each scenario runs twice: with leases off (RATE_LIMIT_REDIS_LEASES=false: every admission is
 * decided by a script call, what the list above describes) and with leases on (the default: a
 * worker admits from a slice of the window it leased, and Redis is asked only for a new lease or
 * to settle). Prints p50/p99 latency per decision and decisions/s.
 *
 * Run: npm run build && node dist/bench/redis-limiter-micro.js
 * Env: BENCH_DECISIONS (per scenario, default 20000), REDIS_SERVER_BIN (default redis-server).
 */
import { spawn } from 'node:child_process';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { percentile } from './order-stats.js';
import type { RateLimitSpec } from 'inference-router/config/resource-types';
import { CounterStore } from 'inference-router/ratelimit/local/counter-store';
import { RedisLimiter } from 'inference-router/ratelimit/redis/limiter';
import { parseRedisLimitSettings } from 'inference-router/ratelimit/redis/settings';
import { takesNoArguments } from './cli-args.js';

takesNoArguments('Usage: node dist/bench/redis-limiter-micro.js   (no options; BENCH_DECISIONS per scenario, REDIS_SERVER_BIN)');

const N = Number(process.env.BENCH_DECISIONS ?? 20_000);
const LIMIT: RateLimitSpec = { inputTokensPerUnit: Number.MAX_SAFE_INTEGER, outputTokensPerUnit: 1_000_000_000_000, unit: 'day', global: null, mode: 'enforce' };

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer().on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

async function startRedis(port: number): Promise<() => void> {
  const proc = spawn(process.env.REDIS_SERVER_BIN ?? 'redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const kill = (): void => {
    proc.kill('SIGKILL');
  };
  process.once('exit', kill);
  for (let i = 0; i < 200; i++) {
    const up = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.destroy();
        resolve(true);
      }).on('error', () => resolve(false));
    });
    if (up) return kill;
    await new Promise((r) => setTimeout(r, 25));
  }
  kill();
  throw new Error(`redis-server did not start on port ${port}`);
}

async function scenario(name: string, inFlight: number, one: (i: number) => Promise<unknown>, landed: () => Promise<unknown> = async () => {}): Promise<void> {
  for (let i = 0; i < Math.min(2_000, N); i++) await one(i); // warm-up (script loaded, JIT)
  const lat = new Float64Array(N);
  let next = 0;
  const t0 = performance.now();
  const lane = async (): Promise<void> => {
    while (next < N) {
      const i = next++;
      const t = performance.now();
      await one(i);
      lat[i] = performance.now() - t;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  await landed();
  const seconds = (performance.now() - t0) / 1000;
  lat.sort();
  console.log(
    `${name.padEnd(64)} in flight ${String(inFlight).padStart(3)}  p50 ${percentile(lat, 0.5).toFixed(3)} ms  p99 ${percentile(lat, 0.99).toFixed(3)} ms  ${Math.round(N / seconds).toLocaleString('en-US')} /s`,
  );
}

async function main(): Promise<void> {
  const port = await freePort();
  const stop = await startRedis(port);
  console.log(`RedisLimiter against redis-server on 127.0.0.1:${port}, ${N.toLocaleString('en-US')} decisions per scenario, node ${process.version}`);
  try {
    await scenarios(port, false);
    await scenarios(port, true);
  } finally {
    stop();
  }
}

/** Every scenario against one limiter with leases on or off; the names say which. */
async function scenarios(port: number, leases: boolean): Promise<void> {
  const label = leases ? 'leases on' : 'leases off';
  const settings = parseRedisLimitSettings({ RATE_LIMIT_REDIS_FAILURE_MODE: 'closed', RATE_LIMIT_REDIS_TIMEOUT: '5s', RATE_LIMIT_REDIS_LEASES: String(leases) });
  const limiter = new RedisLimiter(`127.0.0.1:${port}`, settings, new CounterStore(), { log: (m) => console.error(m) });
  while (limiter.state !== 'up') await new Promise((r) => setTimeout(r, 10));
  // Routes of their own per mode: the other mode's counters and leases do not mix in.
  const routes = Array.from({ length: 64 }, (_, i) => `bench/${leases ? 'l' : 'n'}${i}`);
  try {
    const admit = async (i: number): Promise<unknown> => limiter.admit(routes[i & 63], LIMIT, 4);
    await scenario(`${label}: admit (server clock, 64 routes)`, 1, admit);
    await scenario(`${label}: admit (server clock, 64 routes)`, 100, admit);
    await scenario(`${label}: admit (server clock, one route)`, 100, async () => limiter.admit(routes[0], LIMIT, 4));
    let settles: unknown[] = [];
    const request = (r: string) => async (): Promise<void> => {
      await limiter.admit(r, LIMIT, 4);
      settles.push(limiter.settle(r, LIMIT, -1, 20));
    };
    const landed = async (): Promise<void> => {
      await Promise.all(settles);
      settles = [];
    };
    await scenario(`${label}: admit + settle (one request, 64 routes)`, 100, (i) => request(routes[i & 63])(), landed);
    await scenario(`${label}: admit + settle (one request, one route)`, 100, request(routes[0]), landed);
  } finally {
    await limiter.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
