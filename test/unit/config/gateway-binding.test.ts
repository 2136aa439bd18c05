/**
 * The binding of ModelRoutes to the Gateway ROUTER_GATEWAY names (src/config/gateway-binding.ts),
 * as the route API's reference router binds them, read from resources as users write them.
 */
import { describe, expect, it } from 'vitest';
import { boundToGateway, describeParentRef, routesOfGateway } from '../../../src/config/gateway-binding.js';
import { validateResource } from '../../../src/config/resources.js';
import { sharedModelNameNotes } from '../../../src/config/shared-model-names.js';
import { parseSettings } from '../../../src/config/settings.js';
import type { ModelRoute } from '../../../src/config/resource-types.js';

const GROUP = 'networking.serving.volcano.sh';

/** A valid route of `namespace` serving `model`, with `parentRefs` as written (left out when undefined). */
function route(namespace: string, name: string, parentRefs?: unknown[], model = 'm'): ModelRoute {
  const obj = {
    apiVersion: `${GROUP}/v1alpha1`, kind: 'ModelRoute', metadata: { name, namespace },
    spec: { modelName: model, ...(parentRefs === undefined ? {} : { parentRefs }), rules: [{ targetModels: [{ modelServerName: 's' }] }] },
  };
  return validateResource(obj, 'test', { apiGroup: GROUP, redisCluster: false }) as ModelRoute;
}

describe('binding of a ModelRoute to a Gateway', () => {
  it('a parentRef names a Gateway by name, in the route\'s namespace when it leaves namespace out', () => {
    const r = route('team-a', 'r', [{ name: 'gw' }]);
    expect(boundToGateway(r, 'team-a/gw')).toBe(true);
    expect(boundToGateway(r, 'team-b/gw')).toBe(false);
    expect(boundToGateway(r, 'team-a/gw2')).toBe(false);
    const other = route('team-a', 'r', [{ name: 'default', namespace: 'kthena-system', kind: 'Gateway' }]);
    expect(boundToGateway(other, 'kthena-system/default')).toBe(true);
    expect(boundToGateway(other, 'team-a/default')).toBe(false);
  });

  it('any of several parentRefs binds the route', () => {
    const r = route('default', 'r', [{ name: 'a' }, { name: 'b', namespace: 'infra' }]);
    expect(boundToGateway(r, 'default/a')).toBe(true);
    expect(boundToGateway(r, 'infra/b')).toBe(true);
    expect(boundToGateway(r, 'default/b')).toBe(false);
  });

  it('only parentRefs of group gateway.networking.k8s.io (or none given) and kind Gateway (or none given) name a Gateway', () => {
    for (const ref of [{ group: 'gateway.networking.k8s.io', kind: 'Gateway' }, { kind: 'Gateway' }, { group: 'gateway.networking.k8s.io' }, {}]) {
      expect(boundToGateway(route('default', 'r', [{ name: 'gw', ...ref }]), 'default/gw'), JSON.stringify(ref)).toBe(true);
    }
    // The core group (''), another group, another kind, a kind in other letters: no Gateway.
    for (const ref of [{ group: '', kind: 'Service' }, { group: 'example.com', kind: 'Gateway' }, { kind: 'ListenerSet' }, { kind: 'gateway' }, { group: '' }]) {
      expect(boundToGateway(route('default', 'r', [{ name: 'gw', ...ref }]), 'default/gw'), JSON.stringify(ref)).toBe(false);
    }
  });

  it('sectionName and port do not narrow the binding: the router serves its Gateway on its one port', () => {
    expect(boundToGateway(route('default', 'r', [{ name: 'gw', sectionName: 'http-8081', port: 8081 }]), 'default/gw')).toBe(true);
  });

  it('a route without parentRefs is bound to the Gateways of its own namespace, and no other', () => {
    for (const refs of [undefined, [], null]) {
      const r = route('kthena-system', 'r', refs as unknown[] | undefined);
      expect(boundToGateway(r, 'kthena-system/default'), JSON.stringify(refs)).toBe(true);
      expect(boundToGateway(r, 'kthena-system/other'), JSON.stringify(refs)).toBe(true);
      expect(boundToGateway(r, 'default/default'), JSON.stringify(refs)).toBe(false);
    }
    // A namespace that only starts like the Gateway's is another one.
    expect(boundToGateway(route('team', 'r'), 'team-a/gw')).toBe(false);
  });

  it('a route whose parentRefs name only things other than Gateways is bound to none (it has parentRefs)', () => {
    const r = route('default', 'r', [{ name: 'svc', group: '', kind: 'Service' }]);
    expect(boundToGateway(r, 'default/svc')).toBe(false);
    expect(boundToGateway(r, 'default/gw')).toBe(false);
  });

  it('messages name each parentRef; one that names no Gateway says what it is', () => {
    const r = route('default', 'r', [{ name: 'gw', sectionName: 'http' }, { name: 'svc', group: '', kind: 'Service' }, { name: 'x', namespace: 'infra', kind: 'ListenerSet' }]);
    expect(r.parentRefs.map(describeParentRef)).toEqual([
      'default/gw/http',
      'default/svc (kind "Service", group "": not a Gateway)',
      'infra/x (kind "ListenerSet": not a Gateway)',
    ]);
  });

  it('routesOfGateway keeps the bound routes in order and says of each other one why, naming its parentRefs; no Gateway keeps all', () => {
    const routes = [
      route('default', 'a', [{ name: 'gw-a', kind: 'Gateway' }]),
      route('default', 'b', [{ name: 'gw-b', kind: 'Gateway' }, { name: 'svc', group: '', kind: 'Service' }]),
      route('default', 'none'),
      route('team', 'elsewhere'),
    ];
    const { kept, skipped } = routesOfGateway(routes, 'default/gw-a');
    expect(kept.map((r) => r.key)).toEqual(['default/a', 'default/none']);
    expect(skipped.map((s) => [s.route.key, s.problem])).toEqual([
      ['default/b', 'default/gw-b, default/svc (kind "Service", group "": not a Gateway): not bound to Gateway default/gw-a, so this router does not serve it (ROUTER_GATEWAY=default/gw-a)'],
      ['team/elsewhere', 'none: a route without parentRefs is bound to the Gateways of its own namespace (team), not to Gateway default/gw-a, so this router does not serve it (ROUTER_GATEWAY=default/gw-a)'],
    ]);
    const all = routesOfGateway(routes, null);
    expect(all.kept).toEqual(routes);
    expect(all.skipped).toEqual([]);
  });
});

describe('routes of one model name and their Gateways', () => {
  const a = route('default', 'a', [{ name: 'gw-a' }], 'shared');
  const b = route('default', 'b', [{ name: 'gw-a' }, { name: 'gw-b' }], 'shared');

  it('without ROUTER_GATEWAY, routes of different Gateways are named, and the note points to ROUTER_GATEWAY', () => {
    const notes = sharedModelNameNotes([a, b]);
    expect(notes.map((n) => n.problem)).toEqual([
      'model name "shared" is also served by ModelRoute default/a, which is tried first and whose rule spec.rules[0] takes every request for it, so this route never receives one; '
        + 'a route of a shared model name is tried only when the earlier routes\' rules match none; they are bound to different Gateways (spec.parentRefs: default/gw-a; default/gw-a, default/gw-b), '
        + 'which is not read while ROUTER_GATEWAY is unset: the router serves every route on its own port, so to serve a model name differently per Gateway '
        + 'run a router per Gateway, each with ROUTER_GATEWAY naming its own (<namespace>/<name>)',
    ]);
  });

  it('with ROUTER_GATEWAY, the routes kept are all its own: a hidden route is named, their Gateways are not', () => {
    const notes = sharedModelNameNotes([a, b], 'default/gw-a');
    expect(notes).toHaveLength(1);
    expect(notes[0].problem).toBe('model name "shared" is also served by ModelRoute default/a, which is tried first and whose rule spec.rules[0] takes every request for it, '
      + 'so this route never receives one; a route of a shared model name is tried only when the earlier routes\' rules match none');
    // Two routes that both take a share of the name (the first one's rule has a condition): nothing to say.
    const header = route('default', 'h', [{ name: 'gw-a' }], 'other');
    header.rules[0].modelMatch = { headers: { 'x-tier': { kind: 'exact', value: 'gold' } }, uri: null, model: null };
    const c = route('default', 'c', [], 'other');
    expect(sharedModelNameNotes([header, c], 'default/gw-a')).toEqual([]);
    expect(sharedModelNameNotes([header, c]).map((n) => n.problem)).toEqual([expect.stringContaining('both are bound to different Gateways (spec.parentRefs: default/gw-a; none), which is not read while ROUTER_GATEWAY is unset')]);
  });
});

describe('ROUTER_GATEWAY', () => {
  const settings = (value: string | undefined) => parseSettings(['--resources', 'r.yaml'], { ROUTER_GATEWAY: value });

  it('unset or empty: every route (null); <namespace>/<name> as given', () => {
    expect(settings(undefined)!.gateway).toBeNull();
    expect(settings('')!.gateway).toBeNull();
    expect(settings('kthena-system/default')!.gateway).toBe('kthena-system/default');
    expect(settings('default/kthena-gateway.8081')!.gateway).toBe('default/kthena-gateway.8081');
    expect(settings(`${'n'.repeat(63)}/${'g'.repeat(253)}`)!.gateway).toBe(`${'n'.repeat(63)}/${'g'.repeat(253)}`);
  });

  it('anything else is refused, naming the variable, the form and the value', () => {
    for (const bad of ['default', '/gw', 'default/', 'a/b/c', 'Default/gw', 'default/GW', ' default/gw', 'default/gw ', 'de.fault/gw', 'default/-gw', 'default/gw.',
      `${'n'.repeat(64)}/gw`, `default/${'g'.repeat(254)}`]) {
      expect(() => settings(bad), bad).toThrow(`ROUTER_GATEWAY: expected the Gateway whose ModelRoutes this router serves, as <namespace>/<name> of lower-case letters, digits, '-' (and '.' in the name), e.g. kthena-system/default; got ${JSON.stringify(bad)}`);
    }
  });
});
