/**
 * A pod marked for deletion (metadata.deletionTimestamp set) gets no new requests, though it is
 * still Running and Ready while it shuts down: whether it comes from a list (typed: a Date) or a
 * watch event (JSON: a string), and after podEssentials() trimmed it for the cache.
 */
import { describe, expect, test } from 'vitest';
import { isPodServing, podEssentials, PodLabelIndex, podMatches, podsByNamespace, selectEndpoints, type PodLike } from '../../../src/config/kubernetes-pods.js';
import { mulberry32 } from '../../helpers/mulberry32.js';

function pod(name: string, deletionTimestamp?: unknown): PodLike & { metadata: { uid: string; resourceVersion: string } } {
  return {
    metadata: { name, namespace: 'ml', uid: `uid-${name}`, resourceVersion: '7', labels: { app: 'llm' }, ...(deletionTimestamp === undefined ? {} : { deletionTimestamp }) },
    status: { phase: 'Running', podIP: `10.0.0.${name.length}`, conditions: [{ type: 'Ready', status: 'True' }] },
  };
}

describe('a pod being deleted', () => {
  test('Running and Ready, it serves; marked for deletion (string or Date), it does not', () => {
    expect(isPodServing(pod('a'))).toBe(true);
    expect(isPodServing(pod('a', '2026-01-01T00:00:00Z'))).toBe(false);
    expect(isPodServing(pod('a', new Date('2026-01-01T00:00:00Z')))).toBe(false);
  });

  test('the mark survives the trimming for the cache, and keeps the pod out of its ModelServer\'s endpoints', () => {
    const kept = podEssentials(pod('going', '2026-01-01T00:00:00Z'));
    expect(kept.metadata?.deletionTimestamp).toBe('2026-01-01T00:00:00Z');
    expect(isPodServing(kept)).toBe(false);
    expect(podEssentials(pod('staying')).metadata).not.toHaveProperty('deletionTimestamp');
    const endpoints = selectEndpoints([kept, podEssentials(pod('staying'))], { app: 'llm' }, 8000);
    expect(endpoints.map((e) => e.name)).toEqual(['staying']);
  });
});

describe('the pods a selector can match (PodLabelIndex)', () => {
  test('the same pods as a pass over the namespace, for random pods and selectors (two namespaces, overlapping labels)', () => {
    const rand = mulberry32(7);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
    const pods: PodLike[] = [];
    for (let i = 0; i < 400; i++) {
      const labels: Record<string, string> = {};
      for (const k of ['app', 'model', 'role', 'zone']) if (rand() < 0.8) labels[k] = pick(['a', 'b', 'c', 'd']);
      pods.push({ metadata: { name: `p${i}`, namespace: pick(['ml', 'other']), labels }, status: { phase: 'Running', podIP: `10.0.${i >> 8}.${i & 255}`, conditions: [{ type: 'Ready', status: 'True' }] } });
    }
    const byNs = podsByNamespace(pods);
    const index = new PodLabelIndex(byNs);
    for (let i = 0; i < 300; i++) {
      const selector: Record<string, string> = {};
      for (const k of ['app', 'model', 'role', 'zone', 'missing']) if (rand() < 0.4) selector[k] = pick(['a', 'b', 'c', 'd']);
      const ns = pick(['ml', 'other', 'none']);
      const want = (byNs.get(ns) ?? []).filter((p) => podMatches(p, selector)).map((p) => p.metadata!.name);
      const got = index.candidates(ns, selector).filter((p) => podMatches(p, selector)).map((p) => p.metadata!.name);
      expect(got.sort()).toEqual(want.sort());
      expect(selectEndpoints(index.candidates(ns, selector), selector, 8000)).toEqual(selectEndpoints(byNs.get(ns) ?? [], selector, 8000));
    }
  });
});
