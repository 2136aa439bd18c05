/**
 * FileSource with ROUTER_GATEWAY (rules.gateway): from one file holding routes of one model name
 * bound to two Gateways and one without parentRefs, each router keeps the routes of its Gateway,
 * at start and on reload, and tells of each other route once per change, as information.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FileSource, type FileSourceEvent, type LoadedResources } from '../../../src/config/file-source.js';

const dirs: string[] = [];
const sources: FileSource[] = [];
afterEach(() => {
  for (const s of sources.splice(0)) s.stop();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const API = 'networking.serving.volcano.sh/v1alpha1';
const server = (name: string): string => `apiVersion: ${API}
kind: ModelServer
metadata: { name: ${name}, namespace: default }
spec:
  endpoints: [{ name: ${name}-0, address: "127.0.0.1:1" }]
`;
const route = (name: string, target: string, parentRefs: string): string => `apiVersion: ${API}
kind: ModelRoute
metadata: { name: ${name}, namespace: default }
spec:
  modelName: shared
${parentRefs}  rules:
  - targetModels: [{ modelServerName: ${target} }]
`;
const GW_A = '  parentRefs: [{ name: gw-a, kind: Gateway }]\n';
const GW_B = '  parentRefs: [{ name: gw-b, namespace: default, kind: Gateway }]\n';
const FILE = [server('s-a'), server('s-b'), server('s-none'), route('r-a', 's-a', GW_A), route('r-b', 's-b', GW_B), route('r-none', 's-none', '')].join('---\n');

interface Line { message: string; event: FileSourceEvent }

function started(gateway: string | null, text = FILE): { file: string; source: FileSource; lines: Line[]; applied: LoadedResources[] } {
  const dir = mkdtempSync(join(tmpdir(), 'ir-file-gateway-'));
  dirs.push(dir);
  const file = join(dir, 'resources.yaml');
  writeFileSync(file, text);
  const lines: Line[] = [];
  const applied: LoadedResources[] = [];
  const source = new FileSource({
    file, rules: { apiGroup: 'networking.serving.volcano.sh', redisCluster: false, gateway }, maxBytes: 1 << 20,
    log: (message, event) => lines.push({ message, event }), apply: (r) => applied.push(r),
    // Reloads parse in a worker thread, which runs compiled code (npm run build).
    parseThread: new URL('../../../dist/config/resource-parse-thread.js', import.meta.url),
  });
  sources.push(source);
  source.start(60_000);
  source.stop(); // the reloads below are called by the test
  return { file, source, lines, applied };
}

const keys = (r: LoadedResources | undefined): string[] => (r?.routes ?? []).map((x) => x.key);
const notServed = (lines: Line[]): string[] => lines.filter((l) => l.event === 'not-served').map((l) => l.message);

describe('FileSource with ROUTER_GATEWAY', () => {
  it('each Gateway keeps its routes and the route without parentRefs of its namespace; every other route is one not-served line naming its parentRefs', () => {
    const a = started('default/gw-a');
    expect(keys(a.applied[0])).toEqual(['default/r-a', 'default/r-none']);
    expect(a.applied[0].servers).toHaveLength(3);
    expect(notServed(a.lines)).toEqual([`${a.file}: document 5 (ModelRoute default/r-b): spec.parentRefs: default/gw-b: not bound to Gateway default/gw-a, `
      + 'so this router does not serve it (ROUTER_GATEWAY=default/gw-a)']);
    // The route kept after r-a is hidden by it (as with any two routes of a name); their Gateways are not remarked on.
    const warnings = a.lines.filter((l) => l.event === 'warning').map((l) => l.message);
    expect(warnings).toEqual([expect.stringContaining('(ModelRoute default/r-none): spec.modelName: model name "shared" is also served by ModelRoute default/r-a, which is tried first')]);
    expect(warnings[0]).not.toContain('Gateway');

    const b = started('default/gw-b');
    expect(keys(b.applied[0])).toEqual(['default/r-b', 'default/r-none']);
    expect(notServed(b.lines)).toEqual([expect.stringMatching(/document 4 \(ModelRoute default\/r-a\): spec\.parentRefs: default\/gw-a: not bound to Gateway default\/gw-b, /)]);
  });

  it('a Gateway of another namespace keeps none of them: the route without parentRefs is told why too', () => {
    const { file, applied, lines } = started('infra/gw');
    expect(keys(applied[0])).toEqual([]);
    expect(notServed(lines)).toEqual([
      expect.stringContaining('(ModelRoute default/r-a): spec.parentRefs: default/gw-a: not bound to Gateway infra/gw'),
      expect.stringContaining('(ModelRoute default/r-b): spec.parentRefs: default/gw-b: not bound to Gateway infra/gw'),
      `${file}: document 6 (ModelRoute default/r-none): spec.parentRefs: none: a route without parentRefs is bound to the Gateways of its own namespace (default), `
        + 'not to Gateway infra/gw, so this router does not serve it (ROUTER_GATEWAY=infra/gw)',
    ]);
    expect(lines.filter((l) => l.event === 'warning')).toEqual([]);
  });

  it('without ROUTER_GATEWAY every route is served, and the routes of different Gateways are warned about as before', () => {
    const { applied, lines } = started(null);
    expect(keys(applied[0])).toEqual(['default/r-a', 'default/r-b', 'default/r-none']);
    expect(notServed(lines)).toEqual([]);
    expect(lines.filter((l) => l.message.includes('bound to different Gateways'))).toHaveLength(2);
  });

  it('a reload that binds a route to the Gateway serves it; the lines of the routes still not served are told again with the change', async () => {
    const { file, source, lines, applied } = started('default/gw-a');
    writeFileSync(file, FILE.replace(GW_B, '  parentRefs: [{ name: gw-b }, { name: gw-a }]\n'));
    await source.reload();
    expect(keys(applied[1])).toEqual(['default/r-a', 'default/r-b', 'default/r-none']);
    expect(notServed(lines)).toHaveLength(1); // the start's only
    writeFileSync(file, FILE.replace(GW_A, '  parentRefs: [{ name: gw-c }]\n'));
    await source.reload();
    expect(keys(applied[2])).toEqual(['default/r-none']);
    expect(notServed(lines).slice(1)).toEqual([
      expect.stringContaining('(ModelRoute default/r-a): spec.parentRefs: default/gw-c: not bound to Gateway default/gw-a'),
      expect.stringContaining('(ModelRoute default/r-b): spec.parentRefs: default/gw-b: not bound to Gateway default/gw-a'),
    ]);
  });

  it('a parentRefs entry without a name refuses the file, naming the file, the route and the field; a reload keeps the last good config', async () => {
    const noName = FILE.replace(GW_B, '  parentRefs: [{ namespace: default, kind: Gateway }]\n');
    expect(() => started('default/gw-a', noName)).toThrow(/: document 5 \(ModelRoute default\/r-b\): spec\.parentRefs\[0\]\.name: is required: expected the name of the Gateway \(or other parent\) the route is bound to$/);
    const { file, source, applied, lines } = started('default/gw-a');
    writeFileSync(file, FILE.replace(GW_A, '  parentRefs: [{ name: gw-a, port: 70000 }]\n'));
    await source.reload();
    expect(applied).toHaveLength(1);
    expect(lines.at(-1)).toMatchObject({ event: 'reload-rejected', message: expect.stringContaining(`${file}: document 4 (ModelRoute default/r-a): spec.parentRefs[0].port: must be an integer from 1 to 65535, got 70000`) });
  });

  it('the warnings are about the routes served and the ModelServers they target only: those of another Gateway\'s routes are its router\'s', () => {
    // Gateway gw-b's routes and ModelServer, with one of each warning a loaded resource can get.
    const GW_B_ONLY = `apiVersion: ${API}
kind: ModelServer
metadata: { name: s-b, namespace: default }
spec:
  modle: typo
  workloadSelector: { matchLabels: { app: b } }
  workloadPort: { port: 8000, protocol: https }
---
apiVersion: ${API}
kind: ModelServer
metadata: { name: s-idle, namespace: default }
spec:
  workloadSelector: { matchLabels: { app: idle } }
---
apiVersion: ${API}
kind: ModelRoute
metadata: { name: r-b, namespace: default }
spec:
  modelName: b-model
  extra: 1
${GW_B}  rules:
  - modelMatch: { headers: { x-tier: { regex: "^(\\\\w+,?)+$" } } }
    targetModels: [{ modelServerName: s-b, weight: 0 }]
  - targetModels: [{ modelServerName: s-b }]
  rateLimit: { outputTokensPerUnit: 5, global: {} }
---
apiVersion: ${API}
kind: ModelRoute
metadata: { name: r-b2, namespace: default }
spec:
  modelName: b-model
${GW_B}  rules:
  - targetModels: [{ modelServerName: s-b }]
`;
    const text = [server('s-a'), route('r-a', 's-a', GW_A), GW_B_ONLY].join('---\n');
    const warnings = (gateway: string | null): string[] => started(gateway, text).lines.filter((l) => l.event === 'warning').map((l) => l.message);
    const ofGatewayB = [
      '(ModelServer default/s-b): spec.modle: unknown field',
      '(ModelServer default/s-b): spec.workloadPort.protocol: "https" is not read',
      '(ModelRoute default/r-b): spec.extra: unknown field',
      '(ModelRoute default/r-b): spec.rateLimit.global: has no redis.address',
      '(ModelRoute default/r-b): spec.rules[0].modelMatch.headers.x-tier.regex: "^(\\\\w+,?)+$" repeats a part that repeats itself',
      '(ModelServer default/s-b): spec.endpoints: not set',
      '(ModelRoute default/r-b): spec.rules[0].targetModels: every target has weight 0',
      '(ModelRoute default/r-b2): spec.modelName: model name "b-model" is also served by ModelRoute default/r-b',
    ];
    const idle = '(ModelServer default/s-idle): spec.endpoints: not set';
    expect(warnings('default/gw-a')).toEqual([]);
    const b = warnings('default/gw-b');
    expect(b).toHaveLength(ofGatewayB.length);
    ofGatewayB.forEach((part, i) => expect(b[i], part).toContain(part));
    // Without a Gateway, every resource concerns the router: the ModelServer no route targets too.
    const all = warnings(null);
    for (const part of [...ofGatewayB, idle]) expect(all.filter((w) => w.includes(part)), part).toHaveLength(1);
  });

  it('the file is checked whole: a route of another Gateway naming a missing ModelServer refuses it, as for every router reading it', async () => {
    expect(() => started('default/gw-a', FILE.replace('modelServerName: s-b', 'modelServerName: s-gone')))
      .toThrow(/\(ModelRoute default\/r-b\): spec\.rules\[0\]\.targetModels\[0\]\.modelServerName: ModelServer default\/s-gone does not exist/);
    const { file, source, applied, lines } = started('default/gw-a');
    writeFileSync(file, FILE.replace('modelServerName: s-b', 'modelServerName: s-gone'));
    await source.reload();
    expect(applied).toHaveLength(1);
    expect(lines.at(-1)).toMatchObject({ event: 'reload-rejected', message: expect.stringContaining('ModelServer default/s-gone does not exist') });
  });
});
