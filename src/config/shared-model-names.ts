/**
 * Routes that serve the same model name, as the route API serves them: all of them, tried in
 * turn, oldest first (byCreation; in a file, those without a creationTimestamp after, in file order). A request goes to the first route
 * whose first matching rule has a target with a weight above 0; the next route is tried when a
 * route's rules match none, or its matching rule's targets all have weight 0. What is worth
 * saying at load about such a set: a later route that can never be reached, and, when no Gateway is
 * set (ROUTER_GATEWAY), Gateways (spec.parentRefs) that do not separate the routes. With a Gateway
 * set, the routes given are those bound to it (gateway-binding.ts), so theirs are not compared.
 */
import type { ModelRoute, Rule } from './resource-types.js';
import { describeParentRef } from './gateway-binding.js';

/**
 * The order routes of one model name are tried in: older creationTimestamp first; none counts as
 * newest; equal ones are left as they are (a stable sort keeps them in the order given).
 */
export function byCreation(a: ModelRoute, b: ModelRoute): number {
  const ta = a.creationTimestamp === null ? Number.POSITIVE_INFINITY : Date.parse(a.creationTimestamp);
  const tb = b.creationTimestamp === null ? Number.POSITIVE_INFINITY : Date.parse(b.creationTimestamp);
  return ta === tb ? 0 : ta < tb ? -1 : 1;
}

export interface SharedNameNote {
  route: ModelRoute;
  path: string;
  problem: string;
}

/** The rule of `route` that takes every request for `name` and has a target with weight, or -1. */
function catchAllRule(route: ModelRoute, name: string): number {
  return route.rules.findIndex((r: Rule) => {
    if (!r.targetModels.some((t) => t.weight > 0)) return false;
    const m = r.modelMatch;
    if (m === null) return true;
    return Object.keys(m.headers).length === 0 && m.uri === null && (m.model === null || m.model === name);
  });
}

/** What the notes on routes of different Gateways advise. */
const PER_GATEWAY = 'run a router per Gateway, each with ROUTER_GATEWAY naming its own (<namespace>/<name>)';

/** A route's Gateways as said in a note. */
function gateways(r: ModelRoute): string {
  return r.parentRefs.length === 0 ? 'none' : r.parentRefs.map(describeParentRef).join(', ');
}

/**
 * Notes on the later routes of each model name (spec.modelName) and each LoRA adapter
 * (spec.loraAdapters[i]) that several routes serve. `routes` in the order they are tried. An
 * adapter name that is also some route's modelName is served by that route alone (as the route
 * API does), so it is not a shared adapter name: the routes that list it as an adapter are told
 * so. `gateway`: ROUTER_GATEWAY (null when unset): when
 * set, the routes' Gateways are not remarked on.
 */
export function sharedModelNameNotes(routes: readonly ModelRoute[], gateway: string | null = null): SharedNameNote[] {
  const notes: SharedNameNote[] = [];
  /** Each model name (spec.modelName) and the first route that has it. */
  const modelNames = new Map<string, ModelRoute>();
  for (const r of routes) if (r.modelName !== null && !modelNames.has(r.modelName)) modelNames.set(r.modelName, r);
  /** Per name: its first route, and the first route with a rule that takes every request for it (and that rule's index). */
  const seen = new Map<string, { first: ModelRoute; hider: ModelRoute | null; rule: number }>();
  const look = (route: ModelRoute, name: string, path: string, what: string): void => {
    const s = seen.get(name);
    if (s === undefined) {
      const rule = catchAllRule(route, name);
      seen.set(name, { first: route, hider: rule >= 0 ? route : null, rule });
      return;
    }
    const owner = s.hider;
    if (owner !== null) {
      let problem = `${what} ${JSON.stringify(name)} is also served by ModelRoute ${owner.key}, which is tried first and whose rule spec.rules[${s.rule}] `
        + `takes every request for it, so this route never receives one; a route of a shared model name is tried only when the earlier routes' rules match none`;
      if (gateway === null && gateways(owner) !== gateways(route)) {
        problem += `; they are bound to different Gateways (spec.parentRefs: ${gateways(owner)}; ${gateways(route)}), which is not read while ROUTER_GATEWAY is unset: `
          + `the router serves every route on its own port, so to serve a model name differently per Gateway ${PER_GATEWAY}`;
      }
      notes.push({ route, path, problem });
      return;
    }
    const rule = catchAllRule(route, name);
    if (rule >= 0) {
      s.hider = route;
      s.rule = rule;
    }
    const first = s.first;
    if (gateway === null && gateways(first) !== gateways(route)) {
      notes.push({
        route, path,
        problem: `${what} ${JSON.stringify(name)} is also served by ModelRoute ${first.key}: both are bound to different Gateways (spec.parentRefs: ${gateways(first)}; ${gateways(route)}), which is not read while ROUTER_GATEWAY is unset: `
          + `the router tries the routes of one name in turn on its own port, whichever Gateway they name; to serve a model name differently per Gateway ${PER_GATEWAY}`,
      });
    }
  };
  for (const route of routes) {
    if (route.modelName !== null) look(route, route.modelName, 'spec.modelName', 'model name');
    route.loraAdapters.forEach((adapter, i) => {
      const owner = modelNames.get(adapter);
      if (owner === undefined) look(route, adapter, `spec.loraAdapters[${i}]`, 'LoRA adapter');
      else if (owner !== route) {
        notes.push({
          route, path: `spec.loraAdapters[${i}]`,
          problem: `LoRA adapter ${JSON.stringify(adapter)} is the model name (spec.modelName) of ModelRoute ${owner.key}, which serves every request for it, so this route never receives one for it`,
        });
      }
    });
  }
  return notes;
}
