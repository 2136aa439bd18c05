import { join } from 'node:path';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  awayFromMinuteBoundary, awayFromWindowEnd, postFresh, postJson, resourcesFor, startMock, startRouter, tempDir, writeFile, type MockBackend, type Router,
} from '../helpers/processes.js';
import { RedisServer } from '../helpers/redis-server.js';
import { JwksServer, makeKey, sha256Hex, signToken, type TestKey } from '../unit/auth/jwks-server.js';
import { sample } from '../helpers/metrics-text.js';
import { scriptCallsIn } from '../../bench/redis-stats.js';
import { NOTE_VIEW_MS } from '../../src/ratelimit/redis/refusal-notes.js';
import { LEASE_IDLE_MS } from '../../src/ratelimit/redis/leases.js';

/** 'San Francisco is a' is 4 prompt tokens; 'hello world' 2. */
const PROMPT4 = { model: 'sf-model', prompt: 'San Francisco is a', temperature: 0 };
const PROMPT2 = { model: 'sf-model', prompt: 'hello world' };

function key(name: string, limit = ''): string {
  return `  - name: ${name}\n    sha256: "${sha256Hex(`sk-${name}-0123456789`)}"\n${limit}`;
}

function limitYaml(indent: string, input: number, unit = 'minute', extra = ''): string {
  return `${indent}rateLimit:\n${indent}  inputTokensPerUnit: ${input}\n${indent}  unit: ${unit}\n${extra ? `${indent}  ${extra}\n` : ''}`;
}

function bearer(name: string): Record<string, string> {
  return { authorization: `Bearer sk-${name}-0123456789` };
}

function authed(dir: string, yaml: string, env: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const file = join(dir, 'auth.yaml');
  writeFile(file, yaml);
  return { ROUTER_AUTH_CONFIG: file, ...env };
}


describe('tenant budgets over the built router', () => {
  let mock: MockBackend;
  let noUsage: MockBackend;
  beforeAll(async () => {
    [mock, noUsage] = await Promise.all([startMock('pod-a'), startMock('pod-n', ['--no-usage'])]);
  });
  afterAll(async () => {
    await Promise.all([mock?.kill(), noUsage?.kill()]);
  });

  it('two API keys with 10 input tokens a minute each: each key\'s third request is 429 while the other key still passes', async () => {
    const dir = tempDir();
    const yaml = `apiKeys:\n${key('team-a', limitYaml('    ', 10))}${key('team-b', limitYaml('    ', 10))}`;
    const router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), { dir, env: authed(dir, yaml) });
    try {
      await awayFromMinuteBoundary();
      const seq: [string, number][] = [['team-a', 200], ['team-a', 200], ['team-b', 200], ['team-a', 429], ['team-b', 200], ['team-b', 429]];
      for (const [who, want] of seq) {
        const r = await postFresh(`${router.url}/v1/completions`, PROMPT4, bearer(who));
        expect(r.status, `${who}: ${r.text}`).toBe(want);
        expect(r.headers['x-ratelimit-scope']).toBe('tenant');
        expect(r.headers['x-ratelimit-limit-input-tokens']).toBe('10');
        if (want === 429) {
          expect(r.text).toBe('input token rate limit exceeded');
          expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
        }
      }
    } finally {
      await router.kill();
    }
  });

  it('a route limit and a tenant limit together: the smaller binds, and a rejection charges neither', async () => {
    const dir = tempDir();
    // Route: 12 a minute (3 requests). small: 4 a minute (1 request). big: 100 a minute.
    const yaml = `apiKeys:\n${key('small', limitYaml('    ', 4))}${key('big', limitYaml('    ', 100))}`;
    // A backend without usage: no corrections, so the counts are the router's own (4 per request).
    const free = `---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelRoute
metadata: { name: free-route, namespace: default }
spec:
  modelName: free-model
  rules: [{ name: r, targetModels: [{ modelServerName: sf-server }] }]
`;
    const res = resourcesFor([{ name: 'pod-n', port: noUsage.port }], { rateLimit: '    inputTokensPerUnit: 12\n    unit: minute', extraRoutes: free });
    const router = await startRouter(res, { dir, env: authed(dir, yaml) });
    try {
      await awayFromMinuteBoundary();
      const go = (who: string) => postFresh(`${router.url}/v1/completions`, PROMPT4, bearer(who));
      let r = await go('small');
      expect(r.status).toBe(200);
      // The tenant limit (0 left of 4) is closer to exhaustion than the route's (8 of 12).
      expect(r.headers['x-ratelimit-scope']).toBe('tenant');
      r = await go('small');
      expect(r.status).toBe(429);
      expect(r.headers['x-ratelimit-scope']).toBe('tenant');
      // The route was not charged for small's rejection: big gets two more (4 + 4 + 4 = 12).
      r = await go('big');
      expect(r.status).toBe(200);
      expect(r.headers['x-ratelimit-scope']).toBe('route');
      expect(r.headers['x-ratelimit-remaining-input-tokens']).toBe('4');
      expect((await go('big')).status).toBe(200);
      r = await go('big');
      expect(r.status).toBe(429);
      expect(r.headers['x-ratelimit-scope']).toBe('route');
      // big's tenant budget was not charged by the route's rejection: on a route without a limit
      // its next request leaves 100 - 8 - 4.
      r = await postFresh(`${router.url}/v1/completions`, { ...PROMPT4, model: 'free-model' }, bearer('big'));
      expect(r.status).toBe(200);
      expect(r.headers['x-ratelimit-scope']).toBe('tenant');
      expect(r.headers['x-ratelimit-remaining-input-tokens']).toBe('88');
      const m = await (await fetch(`${router.url}/metrics`, { headers: { connection: 'close' } })).text();
      expect(sample(m, 'inference_router_ratelimit_rejections_total{route="",direction="input",scope="tenant"}')).toBe(1);
      expect(sample(m, 'inference_router_ratelimit_rejections_total{route="default/sf-route",direction="input",scope="route"}')).toBe(1);
      // Input tokens of big's requests (the rejected one too, as the route's input counter counts them).
      expect(sample(m, 'inference_router_tenant_tokens_total{tenant="big",direction="input"}')).toBe(16);
    } finally {
      await router.kill();
    }
  });

  it('route and tenant both exhausted: the 429 shows the tenant\'s day, whose reset is when the request can pass, not the route\'s minute', async () => {
    const dir = tempDir();
    const yaml = `apiKeys:\n${key('daily', limitYaml('    ', 4, 'day'))}`;
    const res = resourcesFor([{ name: 'pod-n', port: noUsage.port }], { rateLimit: '    inputTokensPerUnit: 4\n    unit: minute' });
    const router = await startRouter(res, { dir, env: authed(dir, yaml) });
    try {
      await awayFromMinuteBoundary();
      expect((await postFresh(`${router.url}/v1/completions`, PROMPT4, bearer('daily'))).status).toBe(200);
      const r = await postFresh(`${router.url}/v1/completions`, PROMPT4, bearer('daily'));
      expect(r.status).toBe(429);
      const now = new Date();
      const dayLeft = Math.ceil((Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1) - now.getTime()) / 1000);
      // In the day's last minute both windows end together and either may be shown.
      if (dayLeft > 65) expect(r.headers['x-ratelimit-scope']).toBe('tenant');
      expect(Math.abs(Number(r.headers['retry-after']) - dayLeft)).toBeLessThanOrEqual(5);
      expect(r.headers['x-ratelimit-reset-input-tokens']).toBe(r.headers['retry-after']);
      // One 429, one rejection: counted under the scope and direction the answer names, not once per limit that refused.
      const m = await (await fetch(`${router.url}/metrics`, { headers: { connection: 'close' } })).text();
      const rejections = m.split('\n').filter((l) => l.startsWith('inference_router_ratelimit_rejections_total{'));
      expect(rejections.reduce((a, l) => a + Number(l.slice(l.lastIndexOf(' ') + 1)), 0)).toBe(1);
      const scope = r.headers['x-ratelimit-scope'] as string;
      const route = scope === 'tenant' ? '' : 'default/sf-route';
      expect(sample(m, `inference_router_ratelimit_rejections_total{route="${route}",direction="input",scope="${scope}"}`)).toBe(1);
      expect(r.text).toContain('input token rate limit exceeded');
    } finally {
      await router.kill();
    }
  });

  it('shadow mode never rejects, never sends retry-after, and counts what it would have rejected', async () => {
    const dir = tempDir();
    const yaml = `apiKeys:\n${key('trial', limitYaml('    ', 4, 'minute', 'mode: shadow'))}`;
    const router = await startRouter(resourcesFor([{ name: 'pod-n', port: noUsage.port }]), { dir, env: authed(dir, yaml) });
    try {
      await awayFromMinuteBoundary();
      for (let i = 0; i < 5; i++) {
        const r = await postFresh(`${router.url}/v1/completions`, PROMPT4, bearer('trial'));
        expect(r.status).toBe(200);
        expect(r.headers['retry-after']).toBeUndefined();
      }
      const m = await (await fetch(`${router.url}/metrics`, { headers: { connection: 'close' } })).text();
      // The first fits (4 of 4); the 4 after it would have been rejected.
      expect(sample(m, 'inference_router_rate_limit_shadow_rejections_total{scope="tenant",direction="input"}')).toBe(4);
      expect(sample(m, 'inference_router_tenant_tokens_total{tenant="trial",direction="input"}')).toBe(20);
    } finally {
      await router.kill();
    }
  });

  it('2 workers under a concurrent burst: a tenant limit on top of a route limit admits exactly floor(limit / cost)', async () => {
    const dir = tempDir();
    const yaml = `apiKeys:\n${key('burst', limitYaml('    ', 301, 'day'))}`;
    const res = resourcesFor([{ name: 'pod-n', port: noUsage.port }], { rateLimit: '    inputTokensPerUnit: 100000\n    unit: day' });
    const router = await startRouter(res, { workers: 2, dir, env: authed(dir, yaml) });
    try {
      await fetch(`${noUsage.url}/stats/reset`, { method: 'POST' });
      const statuses = await Promise.all(Array.from({ length: 400 }, () =>
        postJson(`${router.url}/v1/completions`, PROMPT2, bearer('burst')).then(async (r) => { await r.text(); return r.status; })));
      expect(statuses.filter((s) => s === 200).length).toBe(150);
      expect(statuses.filter((s) => s === 429).length).toBe(250);
      expect((await noUsage.stats()).requests).toBe(150);
    } finally {
      await router.kill();
    }
  });
});

describe('JWT tenants by claim', () => {
  let mock: MockBackend;
  let jwks: JwksServer;
  let k1: TestKey;
  let router: Router;
  beforeAll(async () => {
    // A backend without usage: no corrections, so each request counts the router's 4 tokens.
    [mock, jwks, k1] = await Promise.all([startMock('pod-n', ['--no-usage']), new JwksServer().start(), makeKey('k1')]);
    jwks.keys = [k1.jwk];
    const dir = tempDir();
    const yaml = `jwt:
  issuer: https://issuer.test
  audiences: [inference-router]
  jwksUri: ${jwks.url}
  tenantClaim: org
${limitYaml('  ', 4)}  tenantLimits:
    - tenant: acme
${limitYaml('      ', 8)}`;
    router = await startRouter(resourcesFor([{ name: 'pod-n', port: mock.port }]), { dir, env: authed(dir, yaml) });
  });
  afterAll(async () => {
    await Promise.all([router?.kill(), mock?.kill(), jwks?.stop()]);
  });

  it('tenants share a budget by claim; the default applies to tenants without an override', async () => {
    await awayFromMinuteBoundary();
    const token = async (subject: string, org: string) => ({ authorization: `Bearer ${await signToken(k1, { subject, claims: { org } })}` });
    const go = async (subject: string, org: string) => (await postFresh(`${router.url}/v1/completions`, PROMPT4, await token(subject, org))).status;
    // acme: 8 a minute, shared by alice and bob.
    expect(await go('alice', 'acme')).toBe(200);
    expect(await go('bob', 'acme')).toBe(200);
    expect(await go('alice', 'acme')).toBe(429);
    // beta: the default 4 a minute.
    expect(await go('carol', 'beta')).toBe(200);
    expect(await go('carol', 'beta')).toBe(429);
    expect(await go('dave', 'gamma')).toBe(200);
  });
});

describe('global tenant budgets on a real Redis', () => {
  let noUsage: MockBackend;
  let redis: RedisServer;
  beforeAll(async () => {
    [noUsage, redis] = await Promise.all([startMock('pod-n', ['--no-usage']), RedisServer.start()]);
  });
  afterAll(async () => {
    await Promise.all([noUsage?.kill(), redis?.stop()]);
  });

  it('a concurrent burst stays exact: admitted input <= limit, exactly floor(limit / cost); the route is charged only for admitted requests', async () => {
    const global = `global:\n        redis:\n          address: "${redis.address}"`;
    const yaml = `apiKeys:\n${key('burst', `    rateLimit:\n      inputTokensPerUnit: 301\n      unit: day\n      ${global}\n`)}`;
    const res = resourcesFor([{ name: 'pod-n', port: noUsage.port }], {
      rateLimit: `    inputTokensPerUnit: 100000\n    unit: day\n    global:\n      redis:\n        address: "${redis.address}"`,
    });
    const env = { RATE_LIMIT_REDIS_FAILURE_MODE: 'closed', RATE_LIMIT_REDIS_TIMEOUT: '5s' };
    const dirs = [tempDir(), tempDir()];
    const routers = await Promise.all(dirs.map((dir) => startRouter(res, { workers: 2, dir, env: authed(dir, yaml, env) })));
    try {
      // Per-day budgets: the burst and the counts read after it must fall in one UTC day.
      await awayFromWindowEnd(86_400, 20);
      await fetch(`${noUsage.url}/stats/reset`, { method: 'POST' });
      const statuses = await Promise.all(Array.from({ length: 400 }, (_, i) =>
        postJson(`${routers[i % 2].url}/v1/completions`, PROMPT2, bearer('burst')).then(async (r) => { await r.text(); return r.status; })));
      expect(statuses.filter((s) => s === 200).length).toBe(150);
      expect((await noUsage.stats()).requests).toBe(150);
      // The counters hold the leases the workers still have; a router that stops gives them back.
      await Promise.all(routers.map((r) => r.kill()));
      const keys = (await redis.cli('--scan', '--pattern', '*:in:*')).split('\n').filter(Boolean);
      const tenantKey = keys.find((k) => k.includes('tenant:key:burst'));
      const routeKey = keys.find((k) => k.includes('default/sf-route'));
      expect(Number(await redis.cli('GET', tenantKey!))).toBe(300);
      expect(Number(await redis.cli('GET', routeKey!))).toBe(300);
      // Every answer's output charge reached both limits, though the routers stopped right after the answers.
      const outKeys = (await redis.cli('--scan', '--pattern', '*:out:*')).split('\n').filter(Boolean);
      expect(outKeys).toHaveLength(2);
      for (const k of outKeys) expect(Number(await redis.cli('GET', k)), k).toBe(150 * countTokens('tok '.repeat(16)));
      const leased = (await redis.cli('--scan', '--pattern', '*:ls:*')).split('\n').filter(Boolean);
      expect(leased, 'no lease of the route or the tenant still counted as out').toEqual([]);
    } finally {
      await Promise.all(routers.map((r) => r.kill()));
    }
  });

  it('a tenant over its budget, retrying one request at a time: every answer the same 429, and each worker asks Redis about once per note view instead of once per request', async () => {
    const global = `global:\n        redis:\n          address: "${redis.address}"`;
    // One input token a day: every request (2 tokens) is over it from the start.
    const yaml = `apiKeys:\n${key('spent', `    rateLimit:\n      inputTokensPerUnit: 1\n      unit: day\n      ${global}\n`)}`;
    const res = resourcesFor([{ name: 'pod-n', port: noUsage.port }], {
      rateLimit: `    inputTokensPerUnit: 100000\n    unit: day\n    global:\n      redis:\n        address: "${redis.address}"`,
    });
    const dir = tempDir();
    const router = await startRouter(res, { workers: 2, dir, env: authed(dir, yaml, { RATE_LIMIT_REDIS_FAILURE_MODE: 'closed', RATE_LIMIT_REDIS_TIMEOUT: '5s' }) });
    try {
      await fetch(`${noUsage.url}/stats/reset`, { method: 'POST' });
      // Not across a day's end (retry-after would start again from a day).
      await awayFromWindowEnd(86_400, 15);
      const first = await postJson(`${router.url}/v1/completions`, PROMPT2, bearer('spent'));
      expect(first.status).toBe(429);
      const want = await first.text();
      const headers = (r: Response): string[] => ['x-ratelimit-scope', 'x-ratelimit-limit-input-tokens', 'x-ratelimit-remaining-input-tokens'].map((h) => String(r.headers.get(h)));
      const wantHeaders = headers(first);
      expect(wantHeaders).toEqual(['tenant', '1', '1']);
      await redis.cli('config', 'resetstat');
      const n = 100;
      const began = performance.now();
      for (let i = 0; i < n; i++) {
        const r = await postJson(`${router.url}/v1/completions`, PROMPT2, bearer('spent'));
        expect(r.status).toBe(429);
        expect(await r.text()).toBe(want);
        expect(headers(r)).toEqual(wantHeaders);
        expect(Math.abs(Number(r.headers.get('retry-after')) - Number(first.headers.get('retry-after')))).toBeLessThanOrEqual(2);
      }
      const elapsed = performance.now() - began;
      const views = Math.ceil(elapsed / NOTE_VIEW_MS);
      const calls = scriptCallsIn(await redis.cli('info', 'commandstats'));
      // Without notes each of the n requests is a call of its own (one at a time: one a turn). With
      // them, each worker asks once per view (fetch's pool may have opened a second connection,
      // which the kernel may have given to the other worker), and gives back the route's lease
      // that such a call lent once it has been idle for LEASE_IDLE_MS.
      const bound = 2 * (views + 1) + 2 * (Math.ceil(elapsed / LEASE_IDLE_MS) + 1);
      expect(calls, `${calls} script calls for ${n} refused requests in ${elapsed.toFixed(0)} ms`).toBeLessThanOrEqual(bound);
      expect(calls).toBeLessThan(n);
      expect((await noUsage.stats()).requests).toBe(0);
    } finally {
      await router.kill();
    }
  });
});
