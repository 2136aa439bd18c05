/**
 * A table built from a snapshot whose routes are the table in use's (a change of ModelServers
 * only) keeps the routes as compiled and puts the servers that changed in their slots: it must be
 * the table a build from scratch gives. Random routes (rules by header and path,
 * weights, several routes for one model, LoRA adapters, a rule for one served name, limits) and
 * random server changes (pods moved, added, gone; model, timeout, retry, prefill/decode pairs),
 * each table compared with a fresh one on everything a request reads of it.
 */
import { describe, expect, it } from 'vitest';
import type { Endpoint, ModelRoute, ModelServer, RateLimitSpec, ResourceSnapshot, Rule } from '../../../src/config/resource-types.js';
import { RouteTable, type CompiledRoute, type CompiledServer } from '../../../src/route/route-table.js';
import { EndpointRegistry } from '../../../src/upstream/endpoint-registry.js';
import { mulberry32 } from '../../helpers/mulberry32.js';

type Server = ModelServer & { endpoints: Endpoint[] };
const SERVERS = ['s0', 's1', 's2', 's3', 's4'];
const PD = { groupKey: 'g', prefillLabels: { role: 'p' }, decodeLabels: { role: 'd' }, connector: 'nixl' as const };

function randomServer(rand: () => number, name: string): Server {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
  const pd = rand() < 0.2;
  return {
    kind: 'ModelServer', namespace: 'default', name, key: `default/${name}`, model: pick([null, 'base-model']), inferenceEngine: null,
    workloadSelector: null, workloadPort: null, timeoutMs: pick([null, 5000]), retry: pick([null, { attempts: 1, intervalMs: 10 }]),
    endpoints: Array.from({ length: Math.floor(rand() * 4) }, (_, i) => ({
      name: `${name}-p${i}`, host: '127.0.0.1', port: 9000 + Math.floor(rand() * 6),
      ...(pd ? { labels: { g: pick(['a', 'b']), role: pick(['p', 'd', 'x']) } } : {}),
    })),
    ...(pd ? { pd: PD } : {}),
  } as Server;
}

function randomRoutes(rand: () => number, limits: RateLimitSpec[]): ModelRoute[] {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
  return Array.from({ length: 1 + Math.floor(rand() * 12) }, (_, i): ModelRoute => {
    const rules = Array.from({ length: 1 + Math.floor(rand() * 3) }, (_, k): Rule => ({
      name: `rule-${k}`,
      modelMatch: rand() < 0.5 ? null : {
        headers: rand() < 0.5 ? { 'X-Team': { kind: 'exact', value: pick(['a', 'b']) } } : {},
        uri: rand() < 0.5 ? { kind: 'prefix', value: '/v1/chat' } : null,
        model: rand() < 0.3 ? pick(['m0', 'lora-a']) : null,
      },
      targetModels: Array.from({ length: 1 + Math.floor(rand() * 2) }, () => ({ modelServerName: pick(SERVERS.slice(0, 3)), weight: pick([0, 1, 50]) })),
    }));
    return {
      kind: 'ModelRoute', namespace: 'default', name: `r${i}`, key: `default/r${i}`, modelName: rand() < 0.85 ? pick(['m0', 'm1', 'm2', 'm3', 'lora-b']) : null,
      loraAdapters: rand() < 0.3 ? [pick(['lora-a', 'lora-b', 'lora-c'])] : [], rules, rateLimit: rand() < 0.5 ? pick(limits) : null, parentRefs: [], creationTimestamp: null,
    };
  });
}

/** What a request reads of a server. */
function serverView(s: CompiledServer) {
  return {
    key: s.key, model: s.model, timeoutMs: s.timeoutMs, inferenceEngine: s.inferenceEngine, retry: s.retry, endpoints: s.endpoints,
    pd: s.pd === null ? null : { ...s.pd, prefillOf: [...s.pd.prefillOf] },
  };
}

/** What a request reads of a chain of routes for one name. */
function chainView(first: CompiledRoute | undefined) {
  const out = [];
  for (let r = first ?? null; r !== null; r = r.next) {
    out.push({
      key: r.key, modelName: r.modelName, rateLimit: r.rateLimit, limitKey: r.limitKey,
      rules: r.rules.map((rule) => ({ name: rule.name, model: rule.model, headers: rule.headerMatchers.map(([n]) => n), uri: rule.uriMatcher !== null, servers: rule.servers.map((slot) => serverView(slot.current)), cumulative: rule.cumulative })),
    });
  }
  return out;
}

function expectSameTable(t: RouteTable, fresh: RouteTable, names: readonly string[], keys: readonly string[], what: string): void {
  expect(t.version, what).toBe(fresh.version);
  expect(t.modelsJson, what).toBe(fresh.modelsJson);
  expect(t.servedModelsHint, what).toBe(fresh.servedModelsHint);
  expect([...t.matchHeaderNames].sort(), what).toEqual([...fresh.matchHeaderNames].sort());
  expect(new Set(t.rateLimits), what).toEqual(new Set(fresh.rateLimits));
  for (const name of names) {
    expect(chainView(t.route(name)), `${what}: ${name}`).toEqual(chainView(fresh.route(name)));
    expect(t.modelJson(name), what).toBe(fresh.modelJson(name));
    // The same picks for the same draws, by header and path.
    for (const [url, team] of [['/v1/chat/completions', 'a'], ['/v1/completions', 'b']]) {
      for (const x of [0, 0.3, 0.7, 0.99]) {
        const input = { url, header: (n: string) => (n === 'x-team' ? team : '') };
        const [a, b] = [t.route(name), fresh.route(name)];
        if (a === undefined || b === undefined) continue;
        const [pa, pb] = [RouteTable.pick(a, input, () => x), RouteTable.pick(b, input, () => x)];
        const view = (p: typeof pa) => (p === null || typeof p === 'symbol' ? p : serverView(p));
        expect(view(pa), what).toEqual(view(pb));
      }
    }
  }
  for (const key of keys) expect(t.server(key) && serverView(t.server(key)!), `${what}: ${key}`).toEqual(fresh.server(key) && serverView(fresh.server(key)!));
}

describe('RouteTable built on the table in use when only ModelServers changed', () => {
  it('is the table a build from scratch gives, change after change', () => {
    const names = ['m0', 'm1', 'm2', 'm3', 'lora-a', 'lora-b', 'lora-c', 'nope'];
    const keys = SERVERS.map((s) => `default/${s}`);
    let reused = 0;
    for (let seed = 1; seed <= 60; seed++) {
      const rand = mulberry32(seed);
      const limits: RateLimitSpec[] = [{ inputTokensPerUnit: 10, outputTokensPerUnit: null, unit: 'minute', global: null, mode: 'enforce' } as unknown as RateLimitSpec];
      const routes = randomRoutes(rand, limits);
      let servers = SERVERS.slice(0, 3).map((n) => randomServer(rand, n));
      const registry = new EndpointRegistry({ connections: 1 });
      let table = new RouteTable({ version: 1, routes, servers, createdAt: 1_000_000 }, registry, 30_000);
      for (let version = 2; version <= 12; version++) {
        // Change some servers: one redrawn, one added or gone (a gone one that a route targets fails both ways).
        servers = servers.map((s) => (rand() < 0.4 ? randomServer(rand, s.name) : s));
        if (rand() < 0.2) servers = [...servers, randomServer(rand, SERVERS[3 + Math.floor(rand() * 2)])].filter((s, i, all) => all.findIndex((o) => o.key === s.key) === i);
        if (rand() < 0.1) servers = servers.slice(0, -1);
        // Through JSON, as IPC carries them; the routes stay the table's own array.
        const snapshot: ResourceSnapshot = { version, routes, servers: JSON.parse(JSON.stringify(servers)), createdAt: rand() < 0.8 ? 1_000_000 : 1_000_000 + version * 1000 };
        const fresh = (() => {
          try {
            return new RouteTable({ ...snapshot, routes: JSON.parse(JSON.stringify(routes)) }, new EndpointRegistry({ connections: 1 }), 30_000);
          } catch (err) {
            return err as Error;
          }
        })();
        let next: RouteTable | Error;
        try {
          next = new RouteTable(snapshot, registry, 30_000, Date.now(), table);
        } catch (err) {
          next = err as Error;
        }
        if (fresh instanceof Error || next instanceof Error) {
          expect(next instanceof Error ? next.message : 'built', `seed ${seed} v${version}`).toBe(fresh instanceof Error ? fresh.message : 'built');
          servers = JSON.parse(JSON.stringify(table.server('default/s0') ? servers.filter((s) => table.server(s.key)) : servers));
          continue;
        }
        expect(next.routesVersion).toBe(1);
        // The endpoint states are the registry's own: compared by what they are, each table with its registry.
        // Built from scratch (another array of the same routes: their limit objects are the same).
        const sameRegistry = new RouteTable({ ...snapshot, routes: [...routes] }, registry, 30_000);
        expectSameTable(next, sameRegistry, names, keys, `seed ${seed} v${version}`);
        table = next;
        reused++;
      }
    }
    expect(reused).toBeGreaterThan(300);
  });

  it('keeps the routes as compiled and puts a server that changed in its slot; a build that fails leaves the table in use as it was', () => {
    const s = (name: string, port: number): Server => ({
      kind: 'ModelServer', namespace: 'default', name, key: `default/${name}`, model: null, inferenceEngine: null, workloadSelector: null, workloadPort: null, timeoutMs: null, retry: null,
      endpoints: [{ name: `${name}-pod`, host: '127.0.0.1', port }],
    });
    const route = (name: string, server: string): ModelRoute => ({
      kind: 'ModelRoute', namespace: 'default', name, key: `default/${name}`, modelName: name, loraAdapters: [], parentRefs: [], creationTimestamp: null, rateLimit: null,
      rules: [{ name: 'default', modelMatch: null, targetModels: [{ modelServerName: server, weight: 1 }] }],
    });
    const input = { url: '/v1/completions', header: () => '' };
    const origin = (t: RouteTable, name: string): string => (RouteTable.pick(t.route(name)!, input) as CompiledServer).endpoints[0].origin;
    const routes = [route('a', 'sa'), route('b', 'sb')];
    const registry = new EndpointRegistry({ connections: 1 });
    const t1 = new RouteTable({ version: 1, routes, servers: [s('sa', 9001), s('sb', 9002)] }, registry, 1000);
    const sa = t1.server('default/sa');
    const t2 = new RouteTable({ version: 2, routes, servers: [s('sa', 9001), s('sb', 9003)] }, registry, 1000, Date.now(), t1);
    expect(t2.route('a')).toBe(t1.route('a'));
    expect(t2.route('b')).toBe(t1.route('b'));
    expect(t2.server('default/sa')).toBe(sa);
    expect([origin(t2, 'a'), origin(t2, 'b')]).toEqual(['http://127.0.0.1:9001', 'http://127.0.0.1:9003']);
    // sb gone while route b targets it: refused, and t2 sends where it sent.
    const pods = [...registry.states()].map((e) => e.origin).sort();
    expect(() => new RouteTable({ version: 3, routes, servers: [s('sa', 9004)] }, registry, 1000, Date.now(), t2)).toThrow('default/b: rule default names unknown ModelServer sb');
    expect([origin(t2, 'a'), origin(t2, 'b')]).toEqual(['http://127.0.0.1:9001', 'http://127.0.0.1:9003']);
    // Nor the pods: the refused snapshot's pod (9004) was never taken in.
    expect([...registry.states()].map((e) => e.origin).sort()).toEqual(pods);
    // A whole snapshot sent after changes of ModelServers only says the version its routes came with.
    expect(new RouteTable({ version: 7, routes, servers: [s('sa', 9001), s('sb', 9003)] }, registry, 1000, Date.now(), null, 5).routesVersion).toBe(5);
    // Another routes array (a full snapshot): compiled from scratch.
    const t3 = new RouteTable({ version: 3, routes: [...routes], servers: [s('sa', 9001), s('sb', 9003)] }, registry, 1000, Date.now(), t2);
    expect(t3.route('a')).not.toBe(t2.route('a'));
    expect([t2.routesVersion, t3.routesVersion]).toEqual([1, 3]);
  });
});

const NS = ['a', 'b'];
const srv = (ns: string, name: string, port: number, model: string | null): Server => ({ kind: 'ModelServer', namespace: ns, name, key: `${ns}/${name}`, model, inferenceEngine: null, workloadSelector: null, workloadPort: null, timeoutMs: null, retry: null, endpoints: [{ name: `${ns}-${name}-${port}`, host: '127.0.0.1', port }] } as unknown as Server);
describe('RouteTable built on the table in use, across namespaces', () => {
  it('is the build from scratch with servers in two namespaces, a key given twice, servers gone and back, adapters', () => {
  let checked = 0;
  for (let seed = 1; seed <= 200; seed++) {
    const rand = mulberry32(seed);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
    const routes: ModelRoute[] = Array.from({ length: 1 + Math.floor(rand() * 6) }, (_, i) => {
      const ns = pick(NS);
      return { kind: 'ModelRoute', namespace: ns, name: `r${i}`, key: `${ns}/r${i}`, modelName: rand() < 0.7 ? pick(['m0', 'm1']) : null, loraAdapters: rand() < 0.5 ? [pick(['l0', 'm0'])] : [], parentRefs: [], creationTimestamp: null, rateLimit: null,
        rules: [{ name: 'x', modelMatch: null, targetModels: [{ modelServerName: pick(['s0', 's1']), weight: pick([0, 1, 3]) }, { modelServerName: pick(['s0', 's1']), weight: pick([0, 1]) }] }] } as ModelRoute;
    });
    const mk = () => { const out: Server[] = []; for (const ns of NS) for (const n of ['s0', 's1', 's2']) { if (rand() < 0.9) out.push(srv(ns, n, 9000 + Math.floor(rand() * 5), pick([null, 'base']))); if (rand() < 0.2) out.push(srv(ns, n, 9000 + Math.floor(rand() * 5), pick([null, 'base']))); } return out; };
    const reg = new EndpointRegistry({ connections: 1 });
    let table: RouteTable | null = null;
    try { table = new RouteTable({ version: 1, routes, servers: mk(), createdAt: 5000 }, reg, 1000); } catch { continue; }
    for (let v = 2; v < 10; v++) {
      const s: ResourceSnapshot = { version: v, routes, servers: JSON.parse(JSON.stringify(mk())), createdAt: 5000 };
      let fresh: RouteTable | string; let next: RouteTable | string;
      try { fresh = new RouteTable({ ...s, routes: [...routes] }, new EndpointRegistry({ connections: 1 }), 1000); } catch (e) { fresh = (e as Error).message; }
      try { next = new RouteTable(s, reg, 1000, Date.now(), table); } catch (e) { next = (e as Error).message; }
      if (typeof fresh === 'string' || typeof next === 'string') { expect(next).toEqual(fresh); continue; }
      const view = (p: CompiledServer | symbol | null) => (p === null || typeof p === 'symbol' ? p : { k: p.key, m: p.model, e: p.endpoints.map((x) => x.key) });
      for (const name of ['m0', 'm1', 'l0', 'zz']) {
        expect(next.unknownModelHint(name)).toBe(fresh.unknownModelHint(name));
        const [a, b] = [next.route(name), fresh.route(name)];
        expect(a === undefined).toBe(b === undefined);
        for (let ra = a ?? null, rb = b ?? null; ra !== null && rb !== null; ra = ra.next, rb = rb.next)
          for (const x of [0, 0.2, 0.5, 0.8, 0.99]) expect(view(RouteTable.pick(ra, { url: '/', header: () => '' }, () => x))).toEqual(view(RouteTable.pick(rb, { url: '/', header: () => '' }, () => x)));
      }
      for (const ns of NS) for (const n of ['s0', 's1', 's2']) { const k = `${ns}/${n}`; const [x, y] = [next.server(k), fresh.server(k)]; expect(x && view(x)).toEqual(y && view(y)); }
      expect(next.modelsJson).toBe(fresh.modelsJson);
      table = next; checked++;
    }
  }
  expect(checked).toBeGreaterThan(100);
});
});
