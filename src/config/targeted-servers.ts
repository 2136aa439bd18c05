/**
 * The ModelServers that routes target: a target (spec.rules[].targetModels[].modelServerName)
 * names a ModelServer of its route's own namespace. With ROUTER_GATEWAY set, the routes served
 * decide which ModelServers concern this router: the load-time lines about the others are not
 * logged (resource-file.ts, kubernetes-snapshot.ts).
 */
import type { ModelRoute } from './resource-types.js';

/** `<namespace>/<name>` of every ModelServer a target of `routes` names. */
export function targetedServerKeys(routes: readonly ModelRoute[]): Set<string> {
  const keys = new Set<string>();
  for (const route of routes) {
    for (const rule of route.rules) for (const t of rule.targetModels) keys.add(`${route.namespace}/${t.modelServerName}`);
  }
  return keys;
}
