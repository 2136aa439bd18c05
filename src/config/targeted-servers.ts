/**
 * The ModelServers that routes target: a target (spec.rules[].targetModels[].modelServerName)
 * names a ModelServer of its route's own namespace. The routes served decide which ModelServers
 * the router uses: only those are in the snapshot the primary publishes (primary.ts), so the pods
 * of the others are neither scraped for load nor given to the workers' pools, and with
 * ROUTER_GATEWAY set the load-time lines about the others are not logged (resource-file.ts,
 * kubernetes-snapshot.ts).
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

export interface TargetedServers<T> {
  /** The ModelServers a route targets, in the order given. */
  readonly targeted: T[];
  /** `<namespace>/<name>` of the others, in the order given. */
  readonly untargeted: string[];
}

/** `servers` split by whether a target of `routes` names them. */
export function serversOfRoutes<T extends { readonly key: string }>(routes: readonly ModelRoute[], servers: readonly T[]): TargetedServers<T> {
  const keys = targetedServerKeys(routes);
  const targeted: T[] = [];
  const untargeted: string[] = [];
  for (const s of servers) {
    if (keys.has(s.key)) targeted.push(s);
    else untargeted.push(s.key);
  }
  return { targeted, untargeted };
}
