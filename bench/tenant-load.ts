/**
 * Cost of a tenant budget on top of a route limit (tenant budgets, docs/rate-limiting.md): per
 * limit store (local, Redis), one router (2 workers, access log on, the route limited) and two
 * API keys, one without a budget (the route limit alone) and one with a budget (route + tenant,
 * decided together), and a third key whose budget is spent (1 input token a day: every request is
 * answered 429, the cost of a tenant retrying past its budget); autocannon rounds interleaved,
 * the order rotated each round. Reports req/s
 * and router CPU per request (its process tree; the steadier figure on a shared machine) and,
 * for Redis, redis-server's CPU and the script calls (INFO commandstats) per request.
 *
 *   npm run build && node dist/bench/tenant-load.js [--rounds 3] [--seconds 5] [--redis redis-server]
 */
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runAutocannon } from './load-autocannon.js';
import { readCommandLine, type CommandSpec } from './cli-args.js';
import { treeCpu } from './proc-cpu.js';
import { routerResources, type LimitMode } from './scenarios.js';
import { median } from './order-stats.js';
import { infoCommandstats, scriptCallsIn } from './redis-stats.js';
import { haveBinary, startMock, startRedis, startRouter, stopAll, tempDir, type Target } from './targets.js';
import { stopChildrenOnInterrupt } from './interrupt.js';

const COMMAND: CommandSpec = {
  usage: 'Usage: node dist/bench/tenant-load.js [--rounds N] [--seconds S] [--redis BIN]',
  values: ['--rounds', '--seconds', '--redis'],
};
const { ROUNDS, SECONDS, REDIS_BIN } = readCommandLine(COMMAND, (line) => ({
  ROUNDS: line.positiveNumber('--rounds') ?? 3,
  SECONDS: line.positiveNumber('--seconds') ?? 5,
  REDIS_BIN: line.value('--redis') ?? 'redis-server',
}));
const KEY_ROUTE = 'sk-bench-route-only-0123456789';
const KEY_TENANT = 'sk-bench-tenant-0123456789abcd';
const KEY_SPENT = 'sk-bench-spent-0123456789abcde';
/** Never rejects: the field maximum per second. */
const NEVER = 'inputTokensPerUnit: 4294967295, outputTokensPerUnit: 4294967295, unit: second';

const sha = (k: string): string => createHash('sha256').update(k).digest('hex');

function authFile(dir: string, mode: LimitMode): string {
  const global = mode.kind === 'global' ? `, global: {redis: {address: "${mode.redis}"}}` : '';
  const file = join(dir, `auth-${mode.kind}.yaml`);
  writeFileSync(file, `apiKeys:
  - name: route-only
    sha256: "${sha(KEY_ROUTE)}"
  - name: tenant
    sha256: "${sha(KEY_TENANT)}"
    rateLimit: {${NEVER}${global}}
  - name: spent
    sha256: "${sha(KEY_SPENT)}"
    rateLimit: {inputTokensPerUnit: 1, unit: day${global}}
`);
  return file;
}

/** `base`: the index of the variant its CPU is compared with; `refused`: every answer is a 429. */
interface Variant { name: string; target: Target; headers: Record<string, string>; redis: Target | null; redisAddress: string; base: number; refused: boolean }

async function main(): Promise<void> {
  stopChildrenOnInterrupt('tenant-load');
  const dir = tempDir('ir-bench-tenant-');
  const mock = await startMock('pod-a');
  const variants: Variant[] = [];
  const local: LimitMode = { kind: 'local' };
  const env = (mode: LimitMode): NodeJS.ProcessEnv => ({
    ACCESS_LOG_ENABLED: 'true', ACCESS_LOG_FORMAT: 'json', ACCESS_LOG_OUTPUT: join(dir, `access-${mode.kind}.log`),
    ROUTER_AUTH_CONFIG: authFile(dir, mode), RATE_LIMIT_REDIS_FAILURE_MODE: 'closed', RATE_LIMIT_REDIS_TIMEOUT: '2s',
  });
  const localRouter = await startRouter('router (local limits)', routerResources(mock.port, mock.port, local), 2, env(local));
  const add = (store: string, target: Target, redis: Target | null, redisAddress: string): void => {
    const base = variants.length;
    variants.push({ name: `${store}: route limit alone`, target, headers: { authorization: `Bearer ${KEY_ROUTE}` }, redis, redisAddress, base, refused: false });
    variants.push({ name: `${store}: route + tenant limit`, target, headers: { authorization: `Bearer ${KEY_TENANT}` }, redis, redisAddress, base, refused: false });
    variants.push({ name: `${store}: tenant over its budget (every answer 429)`, target, headers: { authorization: `Bearer ${KEY_SPENT}` }, redis, redisAddress, base, refused: true });
  };
  add('local', localRouter, null, '');
  if (haveBinary(REDIS_BIN)) {
    const redis = await startRedis(REDIS_BIN);
    const redisTarget: Target = { name: 'redis-server', url: '', port: 0, proc: redis.proc };
    const global: LimitMode = { kind: 'global', redis: redis.address };
    const globalRouter = await startRouter('router (global limits)', routerResources(mock.port, mock.port, global), 2, env(global));
    add('Redis', globalRouter, redisTarget, redis.address);
  } else {
    process.stderr.write(`${REDIS_BIN} not found: Redis variants skipped\n`);
  }
  const body = JSON.stringify({ model: 'sf-model', prompt: 'San Francisco is a', temperature: 0 });
  const rps: number[][] = variants.map(() => []);
  const cpu: number[][] = variants.map(() => []);
  const redisCpu: number[][] = variants.map(() => []);
  const calls: number[][] = variants.map(() => []);
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < variants.length; k++) {
      const i = (k + round) % variants.length;
      const v = variants[i];
      const routerCpu = treeCpu(v.target.proc.pid);
      const storeCpu = v.redis === null ? null : treeCpu(v.redis.proc.pid);
      const callsBefore = v.redis === null ? 0 : scriptCallsIn(await infoCommandstats(v.redisAddress));
      const r = await runAutocannon({ url: `${v.target.url}/v1/completions`, bodies: [body], connections: 32, durationS: SECONDS, headers: v.headers });
      if (!v.refused && r.non2xx > 0) throw new Error(`${v.name}: ${r.non2xx} answers were not 2xx`);
      if (v.refused && r.non2xx !== r.requests) throw new Error(`${v.name}: ${r.requests - r.non2xx} answers were 2xx, expected 429s`);
      rps[i].push(r.rps);
      cpu[i].push((routerCpu.delta() * 1000) / r.requests);
      if (storeCpu !== null) {
        redisCpu[i].push((storeCpu.delta() * 1000) / r.requests);
        calls[i].push((scriptCallsIn(await infoCommandstats(v.redisAddress)) - callsBefore) / r.requests);
      }
      process.stderr.write(`round ${round + 1} ${v.name}: ${r.rps.toFixed(0)} req/s, router ${cpu[i].at(-1)!.toFixed(1)} µs CPU/req\n`);
    }
  }
  process.stdout.write(`\nTenant budget cost, autocannon 32 connections, 2 workers, access log on, ${ROUNDS} interleaved rounds of ${SECONDS} s, medians:\n\n`);
  process.stdout.write('| variant | req/s | router CPU µs/req | × route alone (CPU) | redis-server CPU µs/req | script calls per request |\n|---|---|---|---|---|---|\n');
  for (let i = 0; i < variants.length; i++) {
    const base = variants[i].base;
    const ratios = cpu[i].map((x, r) => x / cpu[base][r]);
    const rc = redisCpu[i].length > 0 ? median(redisCpu[i]).toFixed(1) : '–';
    const cc = calls[i].length > 0 ? median(calls[i]).toFixed(4) : '–';
    process.stdout.write(`| ${variants[i].name} | ${median(rps[i]).toFixed(0)} | ${median(cpu[i]).toFixed(1)} | ${median(ratios).toFixed(3)} | ${rc} | ${cc} |\n`);
  }
  await stopAll();
}

main().catch(async (err: Error) => {
  process.stderr.write(`tenant-load: ${err.stack ?? err.message}\n`);
  await stopAll();
  process.exit(1);
});
