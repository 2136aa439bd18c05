import { describe, expect, it } from 'vitest';
import type { PdSpec, ResourceSnapshot } from '../../../src/config/resource-types.js';
import { compilePd, RouteTable } from '../../../src/route/route-table.js';
import { EndpointRegistry, EndpointState } from '../../../src/upstream/endpoint-registry.js';

const PD: PdSpec = { groupKey: 'group', prefillLabels: { role: 'prefill' }, decodeLabels: { role: 'decode' }, connector: 'nixl' };

function pods(list: [string, Record<string, string> | undefined][]) {
  const endpoints = list.map(([name, labels], i) => ({ name, host: '127.0.0.1', port: 9000 + i, ...(labels === undefined ? {} : { labels }) }));
  const states = endpoints.map((e) => new EndpointState(e.name, e.host, e.port, { connections: 1 }));
  return { endpoints, states };
}
const names = (xs: readonly EndpointState[]) => xs.map((e) => e.name);

describe('compilePd: pods paired by group and role', () => {
  it('a decode pod serves with the prefill pods of its group; groups without both roles and pods of neither role serve nothing', () => {
    const { endpoints, states } = pods([
      ['p-a0', { group: 'a', role: 'prefill' }],
      ['p-a1', { group: 'a', role: 'prefill' }],
      ['d-a0', { group: 'a', role: 'decode' }],
      ['d-b0', { group: 'b', role: 'decode' }], // no prefill pod in b
      ['p-c0', { group: 'c', role: 'prefill' }], // no decode pod in c
      ['d-c-none', { role: 'decode' }], // no group label
      ['x-a', { group: 'a', role: 'other' }], // neither role
      ['d-d0', { group: 'd', role: 'decode' }],
      ['p-d0', { group: 'd', role: 'prefill' }],
      ['both', { group: 'd', role: 'decode' }],
    ]);
    const pd = compilePd(PD, endpoints, states);
    expect(names(pd.decode)).toEqual(['d-a0', 'd-d0', 'both']);
    expect(names(pd.prefillOf.get(states[2])!)).toEqual(['p-a0', 'p-a1']);
    expect(names(pd.prefillOf.get(states[7])!)).toEqual(['p-d0']);
    expect(pd.prefillOf.get(states[3])).toBeUndefined();
    expect(pd.kvTransfer).toBe(true);
  });

  it('decode labels are checked first (a pod with both roles\' labels decodes), as in the route API', () => {
    const spec: PdSpec = { ...PD, prefillLabels: { tier: 'gpu' }, decodeLabels: { tier: 'gpu', role: 'decode' } };
    const { endpoints, states } = pods([['both', { group: 'a', tier: 'gpu', role: 'decode' }], ['p', { group: 'a', tier: 'gpu' }]]);
    const pd = compilePd(spec, endpoints, states);
    expect(names(pd.decode)).toEqual(['both']);
    expect(names(pd.prefillOf.get(states[0])!)).toEqual(['p']);
  });

  it('passes the prefill answer\'s kv_transfer_params on for nixl and mooncake only', () => {
    for (const [connector, kv] of [['http', false], ['lmcache', false], ['nixl', true], ['mooncake', true]] as const) {
      expect(compilePd({ ...PD, connector }, [], []).kvTransfer, connector).toBe(kv);
    }
  });

  it('a RouteTable compiles pd for a pdGroup server only; its endpoints stay every pod', () => {
    const pdServer = {
      kind: 'ModelServer' as const, namespace: 'default', name: 'pd', key: 'default/pd', model: null, inferenceEngine: 'vLLM', workloadSelector: null,
      workloadPort: null, timeoutMs: null, retry: null, pd: PD,
      endpoints: pods([['p', { group: 'g', role: 'prefill' }], ['d', { group: 'g', role: 'decode' }]]).endpoints,
    };
    const plain = { ...pdServer, name: 'plain', key: 'default/plain', pd: undefined, endpoints: [{ name: 'o', host: '127.0.0.1', port: 9100 }] };
    const snapshot: ResourceSnapshot = { version: 1, routes: [], servers: [pdServer, plain] };
    const table = new RouteTable(snapshot, new EndpointRegistry({ connections: 1 }), 1000);
    const compiled = table.server('default/pd')!;
    expect(names(compiled.endpoints)).toEqual(['p', 'd']);
    expect(names(compiled.pd!.decode)).toEqual(['d']);
    expect(names(compiled.pd!.prefillOf.get(compiled.endpoints[1])!)).toEqual(['p']);
    expect(table.server('default/plain')!.pd).toBeNull();
  });
});
