import { describe, expect, it } from 'vitest';
import type { ModelRoute, ResourceSnapshot } from '../../../src/config/resource-types.js';
import { NO_WEIGHTED_TARGET, RouteTable, type CompiledRoute, type MatchInput } from '../../../src/route/route-table.js';
import { EndpointRegistry } from '../../../src/upstream/endpoint-registry.js';
import { compileMatcher } from '../../../src/route/string-matcher.js';

function server(name: string, pods: string[], model: string | null = null) {
  return {
    kind: 'ModelServer' as const, namespace: 'default', name, key: `default/${name}`, model, inferenceEngine: null,
    workloadSelector: null, workloadPort: null, timeoutMs: null, retry: null,
    endpoints: pods.map((p, i) => ({ name: p, host: '127.0.0.1', port: 9000 + i })),
  };
}

function route(name: string, modelName: string | null, rules: ModelRoute['rules'], loraAdapters: string[] = []): ModelRoute {
  return { kind: 'ModelRoute', namespace: 'default', name, key: `default/${name}`, modelName, loraAdapters, rules, rateLimit: null, parentRefs: [], creationTimestamp: null };
}

const input = (url: string, headers: Record<string, string> = {}) => ({ url, header: (n: string) => headers[n] ?? '' });

function table(s: ResourceSnapshot) {
  return new RouteTable(s, new EndpointRegistry({ connections: 1 }), 300_000);
}

/** The key of the server pick chose, or what it answered instead (null: no rule matched; NO_WEIGHTED_TARGET). */
function pickedKey(r: CompiledRoute, i: MatchInput, random?: () => number): string | null | typeof NO_WEIGHTED_TARGET {
  const s = RouteTable.pick(r, i, random);
  return s === null || s === NO_WEIGHTED_TARGET ? s : s.key;
}

describe('string matchers', () => {
  it('exact, prefix, and regex found anywhere in the value (as the route API reads it)', () => {
    expect(compileMatcher({ kind: 'exact', value: 'a' })('a')).toBe(true);
    expect(compileMatcher({ kind: 'exact', value: 'a' })('ab')).toBe(false);
    expect(compileMatcher({ kind: 'prefix', value: '/v1/' })('/v1/chat')).toBe(true);
    expect(compileMatcher({ kind: 'prefix', value: '/v1/' })('/v2/chat')).toBe(false);
    expect(compileMatcher({ kind: 'regex', value: 'team-[ab]' })('team-a')).toBe(true);
    expect(compileMatcher({ kind: 'regex', value: 'team-[ab]' })('xteam-a')).toBe(true);
    expect(compileMatcher({ kind: 'regex', value: '^team-[ab]$' })('xteam-a')).toBe(false);
    expect(compileMatcher({ kind: 'regex', value: '(?i)^team-[ab]$' })('TEAM-A')).toBe(true);
  });
});

describe('RouteTable', () => {
  const snap: ResourceSnapshot = {
    version: 3,
    servers: [server('s1', ['p1']), server('s2', ['p2']), server('s3', ['p3'])],
    routes: [
      route('r1', 'm', [
        { name: 'team-a', modelMatch: { headers: { 'x-team': { kind: 'exact', value: 'a' } }, uri: null, model: null }, targetModels: [{ modelServerName: 's1', weight: 100 }] },
        { name: 'chat', modelMatch: { headers: {}, uri: { kind: 'prefix', value: '/v1/chat' }, model: null }, targetModels: [{ modelServerName: 's2', weight: 100 }] },
        { name: 'rest', modelMatch: null, targetModels: [{ modelServerName: 's3', weight: 100 }] },
      ]),
      route('r-dup', 'm', [{ name: 'x', modelMatch: null, targetModels: [{ modelServerName: 's1', weight: 100 }] }]),
      route('r-none', 'strict', [{ name: 'only', modelMatch: { headers: { 'x-k': { kind: 'exact', value: 'v' } }, uri: null, model: null }, targetModels: [{ modelServerName: 's1', weight: 100 }] }]),
    ],
  };

  it('finds routes by model name; two routes for one model are chained in the snapshot\'s order', () => {
    const t = table(snap);
    expect(t.route('m')?.key).toBe('default/r1');
    expect(t.route('m')?.next?.key).toBe('default/r-dup');
    expect(t.route('m')?.next?.modelName).toBe('m');
    expect(t.route('m')?.next?.next).toBeNull();
    expect(t.route('strict')?.next).toBeNull();
    expect(t.route('nope')).toBeUndefined();
    expect(JSON.parse(t.modelsJson).data.map((d: { id: string }) => d.id)).toEqual(['m', 'strict']);
    expect([...t.matchHeaderNames].sort()).toEqual(['x-k', 'x-team']);
  });

  it('tells a request for an unknown model which models are served: up to 10 names, then how many more', () => {
    expect(table(snap).servedModelsHint).toBe('; served: "m", "strict"');
    expect(table({ version: 1, servers: [], routes: [] }).servedModelsHint).toBe('; no route serves any model: no ModelRoute applies (the resources have none, or each was skipped: the router\'s log says why)');
    const many = Array.from({ length: 12 }, (_, i) => route(`r${i}`, `m${i}`, [{ name: 'x', modelMatch: null, targetModels: [{ modelServerName: 's1', weight: 100 }] }]));
    expect(table({ version: 1, servers: [server('s1', ['p1'])], routes: many }).servedModelsHint)
      .toBe('; served: "m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "m9" and 2 more (GET /v1/models lists them all)');
  });

  it('names the served model an unknown one is likely a misspelling of: another case, or within two letters', () => {
    const names = ['Qwen/Qwen2.5-7B-Instruct', 'llama-3-8b', 'llama-3-70b', ...Array.from({ length: 12 }, (_, i) => `m${i}`)];
    const routes = names.map((n, i) => route(`r${i}`, n, [{ name: 'x', modelMatch: null, targetModels: [{ modelServerName: 's1', weight: 100 }] }]));
    const t = table({ version: 1, servers: [server('s1', ['p1'])], routes });
    // Past the 10 names listed: the one meant is named even so.
    expect(t.unknownModelHint('qwen/qwen2.5-7b-instruct')).toBe(` (did you mean "Qwen/Qwen2.5-7B-Instruct"?)${t.servedModelsHint}`);
    expect(t.unknownModelHint('Qwen/Qwen2.5-7B-Intsruct')).toBe(` (did you mean "Qwen/Qwen2.5-7B-Instruct"?)${t.servedModelsHint}`);
    expect(t.unknownModelHint('llama-3-8B')).toBe(` (did you mean "llama-3-8b"?)${t.servedModelsHint}`);
    // Two as close (llama-3-8b and llama-3-70b, one edit each), none close, too long: the list alone.
    expect(t.unknownModelHint('llama-3-7b')).toBe(t.servedModelsHint);
    expect(t.unknownModelHint('gpt-4o')).toBe(t.servedModelsHint);
    expect(t.unknownModelHint(`llama-3-8b${'x'.repeat(300)}`)).toBe(t.servedModelsHint);
    expect(table({ version: 1, servers: [], routes: [] }).unknownModelHint('m')).toBe('; no route serves any model: no ModelRoute applies (the resources have none, or each was skipped: the router\'s log says why)');
  });

  it('keeps the hint of a name asked for again (the same answer), at most 256 names, and a new table compares anew', () => {
    const names = ['llama-3-8b', 'llama-3-70b', 'qwen-7b'];
    const routes = names.map((n, i) => route(`r${i}`, n, [{ name: 'x', modelMatch: null, targetModels: [{ modelServerName: 's1', weight: 100 }] }]));
    const t = table({ version: 1, servers: [server('s1', ['p1'])], routes });
    const first = t.unknownModelHint('qwen-7c');
    expect(first).toBe(` (did you mean "qwen-7b"?)${t.servedModelsHint}`);
    expect(t.unknownModelHint('qwen-7c')).toBe(first);
    // 300 other names asked for: the kept hints are emptied once full, and every answer stays right.
    for (let i = 0; i < 300; i++) expect(t.unknownModelHint(`other-${i}`)).toBe(t.servedModelsHint);
    expect(t.unknownModelHint('qwen-7c')).toBe(first);
    expect(t.unknownModelHint('llama-3-8B')).toBe(` (did you mean "llama-3-8b"?)${t.servedModelsHint}`);
    // The next snapshot's table has its own names: the hint follows them.
    const next = table({ version: 2, servers: [server('s1', ['p1'])], routes: [route('r9', 'qwen-7c', [{ name: 'x', modelMatch: null, targetModels: [{ modelServerName: 's1', weight: 100 }] }])] });
    expect(next.unknownModelHint('qwen-7d')).toBe(` (did you mean "qwen-7c"?)${next.servedModelsHint}`);
  });

  it('the rate limits of every route of a shared name are collected; an adapter listed by two routes is chained, a modelName never chained with adapters', () => {
    const limit = (n: number) => ({ inputTokensPerUnit: n, outputTokensPerUnit: null, unit: 'minute' as const, global: null, mode: 'enforce' as const });
    const all = [{ name: 'r', modelMatch: null, targetModels: [{ modelServerName: 's1', weight: 100 }] }];
    const t = table({
      version: 1,
      servers: [server('s1', ['p1'])],
      routes: [
        { ...route('a', 'm', all, ['ad', 'm2']), rateLimit: limit(1) },
        { ...route('b', 'm', all, ['ad']), rateLimit: limit(2) },
        route('c', 'm2', all),
      ],
    });
    expect(t.rateLimits.map((l) => l.inputTokensPerUnit).sort()).toEqual([1, 2]);
    expect([t.route('ad')?.key, t.route('ad')?.next?.key, t.route('ad')?.next?.next]).toEqual(['default/a', 'default/b', null]);
    expect([t.route('m2')?.key, t.route('m2')?.next]).toEqual(['default/c', null]);
  });

  it('serves LoRA adapters by their route, keeping the request model; a modelName wins over an adapter', () => {
    const t = table({
      version: 1,
      servers: [server('base', ['p1'], 'org/base-model'), server('other', ['p2'], 'org/other')],
      routes: [
        route('lora', null, [{ name: 'r', modelMatch: null, targetModels: [{ modelServerName: 'base', weight: 100 }] }], ['lora-a', 'other-model']),
        route('plain', 'other-model', [{ name: 'r', modelMatch: null, targetModels: [{ modelServerName: 'other', weight: 100 }] }]),
      ],
    });
    const lora = t.route('lora-a')!;
    expect([lora.key, lora.modelName]).toEqual(['default/lora', 'lora-a']);
    const picked = RouteTable.pick(lora, input('/v1/completions'));
    expect(picked).toMatchObject({ key: 'default/base', model: null });
    expect(t.route('other-model')?.key).toBe('default/plain');
    expect((RouteTable.pick(t.route('other-model')!, input('/v1/completions')) as { model: string }).model).toBe('org/other');
    expect(JSON.parse(t.modelsJson).data.map((d: { id: string }) => d.id)).toEqual(['other-model', 'lora-a']);
  });

  it('prebuilds the OpenAI model object of each served model, the same as the list shows', () => {
    const t = table(snap);
    const list = JSON.parse(t.modelsJson);
    expect(list.object).toBe('list');
    const m = JSON.parse(t.modelJson('m')!);
    expect(m).toEqual({ id: 'm', object: 'model', created: expect.any(Number), owned_by: 'inference-router' });
    expect(list.data[0]).toEqual(m);
    expect(t.modelJson('nope')).toBeUndefined();
  });

  it('a model\'s created is the time the primary made the snapshot: every worker that compiles it answers the same', () => {
    const at = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
    const tables = [1_000, 9_999_999].map((now) => new RouteTable({ ...snap, createdAt: at }, new EndpointRegistry({ connections: 1 }), 1000, now));
    for (const t of tables) expect(JSON.parse(t.modelJson('m')!).created).toBe(Math.floor(at / 1000));
  });

  it('tries rules in order; the first whose match holds wins; no modelMatch matches all', () => {
    const r = table(snap).route('m')!;
    expect(pickedKey(r, input('/v1/chat/completions', { 'x-team': 'a' }))).toBe('default/s1');
    expect(pickedKey(r, input('/v1/chat/completions'))).toBe('default/s2');
    expect(pickedKey(r, input('/v1/completions'))).toBe('default/s3');
    // A uri match reads the path percent-decoded, as the route API does; one that does not decode is read as sent.
    expect(pickedKey(r, input('/v1/%63hat/completions'))).toBe('default/s2');
    expect(pickedKey(r, input('/v1/chat%ZZ'))).toBe('default/s2');
    expect(pickedKey(r, input('/v1/%E0chat'))).toBe('default/s3');
  });

  it('returns null when no rule matches', () => {
    const r = table(snap).route('strict')!;
    expect(RouteTable.pick(r, input('/v1/completions'))).toBeNull();
    expect(pickedKey(r, input('/v1/completions', { 'x-k': 'v' }))).toBe('default/s1');
  });

  it('draws targets by relative weight; weight 0 gets nothing', () => {
    const t = table({
      version: 1,
      servers: [server('a', ['pa']), server('b', ['pb']), server('z', ['pz'])],
      routes: [route('w', 'w', [{ name: 'x', modelMatch: null, targetModels: [
        { modelServerName: 'a', weight: 75 }, { modelServerName: 'b', weight: 25 }, { modelServerName: 'z', weight: 0 },
      ] }])],
    });
    const r = t.route('w')!;
    const counts: Record<string, number> = {};
    // A deterministic sweep of the random source gives exact proportions.
    for (let i = 0; i < 1000; i++) {
      const key = String(pickedKey(r, input('/'), () => i / 1000));
      counts[key] = (counts[key] ?? 0) + 1;
    }
    expect(counts).toEqual({ 'default/a': 750, 'default/b': 250 });
  });

  it('a matching rule whose targets all have weight 0 sends nothing (NO_WEIGHTED_TARGET), not "no match"', () => {
    const t = table({
      version: 1,
      servers: [server('a', ['pa'])],
      routes: [route('z', 'z', [{ name: 'off', modelMatch: null, targetModels: [{ modelServerName: 'a', weight: 0 }] }])],
    });
    expect(RouteTable.pick(t.route('z')!, input('/'))).toBe(NO_WEIGHTED_TARGET);
  });

  it('keeps endpoint state (in-flight counts, pools) across snapshots for the same pod', () => {
    const reg = new EndpointRegistry({ connections: 1 });
    const t1 = new RouteTable(snap, reg, 1000);
    const e1 = t1.route('m')!.rules[2].servers[0].current.endpoints[0];
    e1.inflight = 7;
    const t2 = new RouteTable({ ...snap, version: 4 }, reg, 1000);
    expect(t2.route('m')!.rules[2].servers[0].current.endpoints[0]).toBe(e1);
    expect(e1.inflight).toBe(7);
  });

  it('applies the default timeout when a server sets none', () => {
    const t = new RouteTable(snap, new EndpointRegistry({ connections: 1 }), 1234);
    expect(t.route('m')!.rules[0].servers[0].current.timeoutMs).toBe(1234);
  });
});
