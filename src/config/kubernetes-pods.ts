/**
 * Pods -> endpoints. A pod serves traffic when it is Running, its Ready condition is True, it
 * has a pod IP and it is not being deleted. Objects come from a list (typed: timestamps are
 * Date) or from a watch event (plain JSON); only fields present in both shapes are read.
 */
import { isIPv6 } from 'node:net';
import type { Endpoint } from './resource-types.js';

/** The parts of a v1 Pod this module reads. */
export interface PodLike {
  metadata?: {
    name?: string;
    namespace?: string;
    labels?: Record<string, string>;
    deletionTimestamp?: unknown;
  };
  status?: {
    phase?: string;
    podIP?: string;
    conditions?: ReadonlyArray<{ type?: string; status?: string }>;
  };
}

/**
 * What the router keeps of a pod: the fields read here, and those the list/watch cache needs
 * (namespace, name, resourceVersion). A whole pod (spec, managedFields, container statuses) is
 * several kilobytes, and in all-namespaces mode every pod of the cluster is kept.
 */
export function podEssentials(pod: PodLike & { metadata?: { uid?: unknown; resourceVersion?: unknown } }): PodLike {
  const meta = pod.metadata ?? {};
  const status = pod.status ?? {};
  const metadata: Record<string, unknown> = { name: meta.name, namespace: meta.namespace, uid: meta.uid, resourceVersion: meta.resourceVersion, labels: meta.labels };
  if (meta.deletionTimestamp !== undefined && meta.deletionTimestamp !== null) metadata.deletionTimestamp = meta.deletionTimestamp;
  const conditions = status.conditions?.map((c) => ({ type: c.type, status: c.status }));
  return { metadata, status: { phase: status.phase, podIP: status.podIP, conditions } } as PodLike;
}

/** True when the pod may receive traffic now. */
export function isPodServing(pod: PodLike): boolean {
  const meta = pod.metadata;
  const status = pod.status;
  if (meta === undefined || status === undefined) return false;
  if (meta.deletionTimestamp !== undefined && meta.deletionTimestamp !== null) return false;
  if (status.phase !== 'Running' || !status.podIP) return false;
  const conditions = status.conditions;
  if (conditions === undefined) return false;
  for (const c of conditions) {
    if (c.type === 'Ready') return c.status === 'True';
  }
  return false;
}

/**
 * True when every label of `matchLabels` is on the pod. An empty selector matches nothing:
 * selecting every pod of a namespace by accident would send inference traffic anywhere.
 */
export function podMatches(pod: PodLike, matchLabels: Readonly<Record<string, string>>): boolean {
  const labels = pod.metadata?.labels;
  let any = false;
  for (const key in matchLabels) {
    any = true;
    if (labels === undefined || labels[key] !== matchLabels[key]) return false;
  }
  return any;
}

/** The endpoint of a serving pod at `port`; IPv6 hosts get brackets, like parsed `[::1]:8000` addresses. */
export function podEndpoint(pod: PodLike, port: number): Endpoint {
  const ip = pod.status?.podIP ?? '';
  return { name: pod.metadata?.name ?? ip, host: isIPv6(ip) ? `[${ip}]` : ip, port };
}

/** Pods grouped by namespace, for per-ModelServer selection. */
export function podsByNamespace(pods: readonly PodLike[]): Map<string, PodLike[]> {
  const out = new Map<string, PodLike[]>();
  for (const pod of pods) {
    const ns = pod.metadata?.namespace ?? 'default';
    let list = out.get(ns);
    if (list === undefined) {
      list = [];
      out.set(ns, list);
    }
    list.push(pod);
  }
  return out;
}

/**
 * The pods a label selector can match, without a pass over every pod of its namespace for each
 * selector: the pods of each namespace indexed once by each of their labels (`key=value`), built
 * when a namespace is first asked for; a selector's candidates are the pods that carry its first
 * label (podMatches still checks the rest).
 */
export class PodLabelIndex {
  private readonly byNamespace = new Map<string, Map<string, PodLike[]>>();

  constructor(private readonly podsByNs: ReadonlyMap<string, readonly PodLike[]>) {}

  candidates(namespace: string, matchLabels: Readonly<Record<string, string>>): readonly PodLike[] {
    const first = Object.entries(matchLabels)[0];
    if (first === undefined) return this.podsByNs.get(namespace) ?? [];
    let index = this.byNamespace.get(namespace);
    if (index === undefined) {
      index = new Map();
      for (const pod of this.podsByNs.get(namespace) ?? []) {
        for (const [k, v] of Object.entries(pod.metadata?.labels ?? {})) {
          const key = `${k}=${v}`;
          const list = index.get(key);
          if (list === undefined) index.set(key, [pod]);
          else list.push(pod);
        }
      }
      this.byNamespace.set(namespace, index);
    }
    return index.get(`${first[0]}=${first[1]}`) ?? [];
  }
}

/**
 * Serving pods of `pods` that match `matchLabels`, as endpoints at `port`, sorted by pod name.
 * `labelKeys` (a pdGroup's): the endpoints carry these of their pod's labels.
 */
export function selectEndpoints(pods: readonly PodLike[], matchLabels: Readonly<Record<string, string>>, port: number, labelKeys: readonly string[] | null = null): Endpoint[] {
  const out: Endpoint[] = [];
  for (const pod of pods) {
    if (!podMatches(pod, matchLabels) || !isPodServing(pod)) continue;
    const e = podEndpoint(pod, port);
    if (labelKeys !== null) e.labels = labelsOf(pod, labelKeys);
    out.push(e);
  }
  out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return out;
}

/** The pod's labels of `keys` (those it has). */
function labelsOf(pod: PodLike, keys: readonly string[]): Record<string, string> {
  const all = pod.metadata?.labels ?? {};
  const out: Record<string, string> = {};
  for (const k of keys) if (all[k] !== undefined) out[k] = all[k];
  return out;
}
