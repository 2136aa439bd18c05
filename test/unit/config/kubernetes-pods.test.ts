/**
 * A pod marked for deletion (metadata.deletionTimestamp set) gets no new requests, though it is
 * still Running and Ready while it shuts down: whether it comes from a list (typed: a Date) or a
 * watch event (JSON: a string), and after podEssentials() trimmed it for the cache.
 */
import { describe, expect, test } from 'vitest';
import { isPodServing, podEssentials, selectEndpoints, type PodLike } from '../../../src/config/kubernetes-pods.js';

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
