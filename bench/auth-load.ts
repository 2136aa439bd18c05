/**
 * Throughput with authentication (API key, JWT) vs without, in one run: three routers side by
 * side (2 workers, no limit, log off) on one mock backend, autocannon rounds interleaved A B C.
 *
 *   npm run build && node dist/bench/auth-load.js [--rounds 3] [--seconds 5]
 */
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { runAutocannon } from './load-autocannon.js';
import { readCommandLine, type CommandSpec } from './cli-args.js';
import { routerResources } from './scenarios.js';
import { median } from './order-stats.js';
import { startMock, startRouter, stopAll, tempDir, type Target } from './targets.js';
import { stopChildrenOnInterrupt } from './interrupt.js';

const COMMAND: CommandSpec = {
  usage: 'Usage: node dist/bench/auth-load.js [--rounds N] [--seconds S]',
  values: ['--rounds', '--seconds'],
};
const { ROUNDS, SECONDS } = readCommandLine(COMMAND, (line) => ({
  ROUNDS: line.positiveNumber('--rounds') ?? 3,
  SECONDS: line.positiveNumber('--seconds') ?? 5,
}));
const KEY = 'sk-bench-0123456789abcdef0123456789';


async function main(): Promise<void> {
  stopChildrenOnInterrupt('auth-load');
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' };
  const jwt = await new SignJWT({ models: ['sf-*'] })
    .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
    .setIssuer('https://issuer.bench').setAudience('inference-router').setSubject('bench')
    .setIssuedAt().setExpirationTime('2h')
    .sign(privateKey);
  const dir = tempDir('ir-bench-auth-');
  const authFile = join(dir, 'auth.yaml');
  writeFileSync(authFile, `apiKeys:
  - name: bench
    sha256: "${createHash('sha256').update(KEY).digest('hex')}"
    models: ["sf-*"]
jwt:
  issuer: https://issuer.bench
  audiences: [inference-router]
  jwks: ${JSON.stringify({ keys: [jwk] })}
  modelsClaim: models
`);
  const mock = await startMock('pod-a');
  const env = { ACCESS_LOG_ENABLED: 'false' };
  const plain = await startRouter('router (no auth)', routerResources(mock.port, mock.port, { kind: 'none' }), 2, env);
  const authed = await startRouter('router (auth)', routerResources(mock.port, mock.port, { kind: 'none' }), 2, { ...env, ROUTER_AUTH_CONFIG: authFile });
  const variants: { name: string; target: Target; headers: Record<string, string> }[] = [
    { name: 'no auth', target: plain, headers: {} },
    { name: 'API key', target: authed, headers: { authorization: `Bearer ${KEY}` } },
    { name: 'JWT (ES256, verified-token cache on)', target: authed, headers: { authorization: `Bearer ${jwt}` } },
  ];
  const body = JSON.stringify({ model: 'sf-model', prompt: 'San Francisco is a', temperature: 0 });
  const rps: number[][] = variants.map(() => []);
  const p99: number[][] = variants.map(() => []);
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < variants.length; k++) {
      const i = (k + round) % variants.length; // rotate the order each round
      const v = variants[i];
      const r = await runAutocannon({ url: `${v.target.url}/v1/completions`, bodies: [body], connections: 32, durationS: SECONDS, headers: v.headers });
      if (r.non2xx > 0) throw new Error(`${v.name}: ${r.non2xx} answers were not 2xx (auth misconfigured?)`);
      rps[i].push(r.rps);
      p99[i].push(r.latencyMs.p99);
      process.stderr.write(`round ${round + 1} ${v.name}: ${r.rps.toFixed(0)} req/s p99 ${r.latencyMs.p99} ms\n`);
    }
  }
  process.stdout.write(`\nAuthentication cost, autocannon 32 connections, 2 workers, ${ROUNDS} interleaved rounds of ${SECONDS} s, medians (min–max):\n\n`);
  process.stdout.write('| variant | req/s | × no auth | p99 ms |\n|---|---|---|---|\n');
  for (let i = 0; i < variants.length; i++) {
    const ratios = rps[i].map((x, r) => x / rps[0][r]);
    process.stdout.write(`| ${variants[i].name} | ${median(rps[i]).toFixed(0)} (${Math.min(...rps[i]).toFixed(0)}–${Math.max(...rps[i]).toFixed(0)}) | ${median(ratios).toFixed(3)} (${Math.min(...ratios).toFixed(3)}–${Math.max(...ratios).toFixed(3)}) | ${median(p99[i])} |\n`);
  }
  await stopAll();
}

main().catch(async (err: Error) => {
  process.stderr.write(`auth-load: ${err.stack ?? err.message}\n`);
  await stopAll();
  process.exit(1);
});
