import type { EndpointState } from 'inference-router/upstream/endpoint-registry';

/**
 * Fewest in-flight requests, random among ties. `exclude` holds endpoints already tried for
 * this request (connection-failure retries). Pods ejected by the outlier detector at `now` are
 * chosen only when every other one is excluded or ejected too (then rather tried than a 503).
 * Returns null when none is left.
 */
export function pickLeastInflight(
  endpoints: readonly EndpointState[],
  exclude: readonly EndpointState[] | null,
  random: () => number = Math.random,
  now = 0,
): EndpointState | null {
  let best: EndpointState | null = null;
  let ties = 0;
  let bestEjected: EndpointState | null = null;
  for (let i = 0; i < endpoints.length; i++) {
    const e = endpoints[i];
    if (exclude !== null && exclude.includes(e)) continue;
    if (e.health.ejectedUntil > now) {
      if (bestEjected === null || e.health.ejectedUntil < bestEjected.health.ejectedUntil) bestEjected = e;
      continue;
    }
    if (best === null || e.inflight < best.inflight) {
      best = e;
      ties = 1;
    } else if (e.inflight === best.inflight) {
      // Reservoir sampling keeps the choice uniform among ties without allocating.
      ties++;
      if (random() * ties < 1) best = e;
    }
  }
  // All left are ejected: the one whose interval ends first.
  return best ?? bestEjected;
}
