/**
 * The ModelServers the routes served target (src/config/targeted-servers.ts): the only ones whose
 * pods the router uses, read from a resources file as users write it.
 */
import { describe, expect, it } from 'vitest';
import { parseResourceFile } from '../../../src/config/resource-file.js';
import { serversOfRoutes, targetedServerKeys } from '../../../src/config/targeted-servers.js';

const API = 'networking.serving.volcano.sh/v1alpha1';
const server = (ns: string, name: string): string => `apiVersion: ${API}
kind: ModelServer
metadata: { name: ${name}, namespace: ${ns} }
spec:
  endpoints: [{ name: ${name}-0, address: "127.0.0.1:1" }]
`;
const route = (ns: string, name: string, spec: string): string => `apiVersion: ${API}
kind: ModelRoute
metadata: { name: ${name}, namespace: ${ns} }
spec:
${spec}`;

const FILE = [
  server('default', 'a'), server('default', 'b'), server('default', 'weightless'), server('default', 'idle'), server('team', 'a'), server('team', 'lora'),
  route('default', 'r', `  modelName: m
  rules:
  - modelMatch: { headers: { x-tier: { exact: gold } } }
    targetModels: [{ modelServerName: b }, { modelServerName: weightless, weight: 0 }]
  - targetModels: [{ modelServerName: a }]
`),
  route('team', 'adapters', `  loraAdapters: [l1]
  rules:
  - targetModels: [{ modelServerName: lora }]
`),
].join('---\n');

describe('the ModelServers the routes target', () => {
  const { routes, servers } = parseResourceFile(FILE, 'r.yaml', { apiGroup: 'networking.serving.volcano.sh', redisCluster: false });

  it('every target of every rule, in its route\'s namespace, a target of weight 0 included', () => {
    expect([...targetedServerKeys(routes)].sort()).toEqual(['default/a', 'default/b', 'default/weightless', 'team/lora']);
  });

  it('splits the servers in their order: those targeted, and the names of the others (a ModelServer of a targeted name in another namespace is another one)', () => {
    const { targeted, untargeted } = serversOfRoutes(routes, servers);
    expect(targeted.map((s) => s.key)).toEqual(['default/a', 'default/b', 'default/weightless', 'team/lora']);
    expect(targeted[0]).toBe(servers[0]);
    expect(untargeted).toEqual(['default/idle', 'team/a']);
  });

  it('no route: no ModelServer is used', () => {
    expect(serversOfRoutes([], servers)).toEqual({ targeted: [], untargeted: servers.map((s) => s.key) });
  });
});
