/**
 * The ModelRoutes a router serving one Gateway (ROUTER_GATEWAY, `<namespace>/<name>`) keeps, bound
 * as the route API's reference router (volcano-sh/kthena) binds them when it serves Gateways:
 *
 * - a route with spec.parentRefs is bound to the Gateways its entries name: an entry whose group is
 *   gateway.networking.k8s.io or left out, and whose kind is Gateway or left out, names the Gateway
 *   `<namespace>/<name>`, its namespace the route's own when left out; entries of other groups or
 *   kinds name no Gateway;
 * - a route without parentRefs is bound to every Gateway of its own namespace;
 * - `sectionName` and `port` do not narrow it: the reference router serves a route bound to a
 *   Gateway on every listener of that Gateway (it only checks that a named listener exists, which
 *   this router, not reading Gateways, cannot), and this router serves its Gateway on its one port.
 *
 * With no Gateway set, every route is kept (parentRefs not read). Both sources apply this at the
 * one step where validated resources become the routes served (resource-file.ts for a file,
 * kubernetes-snapshot.ts for the cluster), before the notes on routes sharing a model name.
 */
import type { ModelRoute, ParentRef } from './resource-types.js';

/** The Gateway API's group: a parentRef's when it leaves `group` out. */
export const GATEWAY_API_GROUP = 'gateway.networking.k8s.io';

/** Whether a parentRef names a Gateway (group and kind that of a Gateway, or left out). */
export function isGatewayRef(ref: ParentRef): boolean {
  return (ref.group === null || ref.group === GATEWAY_API_GROUP) && (ref.kind === null || ref.kind === 'Gateway');
}

/** A parentRef as messages name it: `<namespace>/<name>[/<sectionName>]`, with its kind and group when it names no Gateway. */
export function describeParentRef(ref: ParentRef): string {
  const base = `${ref.namespace}/${ref.name}${ref.sectionName === null ? '' : `/${ref.sectionName}`}`;
  if (isGatewayRef(ref)) return base;
  const what = [...(ref.kind === null ? [] : [`kind ${JSON.stringify(ref.kind)}`]), ...(ref.group === null ? [] : [`group ${JSON.stringify(ref.group)}`])];
  return `${base} (${what.join(', ')}: not a Gateway)`;
}

/** Whether `route` is bound to the Gateway `gateway` (`<namespace>/<name>`). */
export function boundToGateway(route: ModelRoute, gateway: string): boolean {
  if (route.parentRefs.length === 0) return gateway.startsWith(`${route.namespace}/`);
  return route.parentRefs.some((ref) => isGatewayRef(ref) && `${ref.namespace}/${ref.name}` === gateway);
}

/** Why a route not bound to `gateway` is not served: the text after `spec.parentRefs: `. */
export function notBoundProblem(route: ModelRoute, gateway: string): string {
  const served = `so this router does not serve it (ROUTER_GATEWAY=${gateway})`;
  if (route.parentRefs.length === 0) {
    return `none: a route without parentRefs is bound to the Gateways of its own namespace (${route.namespace}), not to Gateway ${gateway}, ${served}`;
  }
  return `${route.parentRefs.map(describeParentRef).join(', ')}: not bound to Gateway ${gateway}, ${served}`;
}

export interface GatewayRoutes {
  /** The routes served, in the order given. */
  readonly kept: ModelRoute[];
  /** The others, each with notBoundProblem(). */
  readonly skipped: { readonly route: ModelRoute; readonly problem: string }[];
}

/** `routes` split by binding to `gateway`; null: every route kept. */
export function routesOfGateway(routes: readonly ModelRoute[], gateway: string | null): GatewayRoutes {
  if (gateway === null) return { kept: [...routes], skipped: [] };
  const kept: ModelRoute[] = [];
  const skipped: { route: ModelRoute; problem: string }[] = [];
  for (const route of routes) {
    if (boundToGateway(route, gateway)) kept.push(route);
    else skipped.push({ route, problem: notBoundProblem(route, gateway) });
  }
  return { kept, skipped };
}
