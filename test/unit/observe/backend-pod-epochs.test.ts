import { describe, expect, it } from 'vitest';
import { nextPodEpochs } from '../../../src/observe/backend-pod-epochs.js';

describe('nextPodEpochs', () => {
  it('a pod keeps its epoch while it stays; one that enters, or comes back after it left, gets the version', () => {
    const v1 = nextPodEpochs(null, ['pod-a', 'pod-x'], 1);
    expect({ ...v1 }).toEqual({ 'pod-a': 1, 'pod-x': 1 });
    const v2 = nextPodEpochs(v1, ['pod-a', 'pod-b'], 2);
    expect({ ...v2 }).toEqual({ 'pod-a': 1, 'pod-b': 2 });
    const v3 = nextPodEpochs(v2, ['pod-a', 'pod-b', 'pod-x'], 3);
    expect({ ...v3 }).toEqual({ 'pod-a': 1, 'pod-b': 2, 'pod-x': 3 });
    // The same pods again (another change elsewhere): nothing moves.
    expect({ ...nextPodEpochs(v3, ['pod-x', 'pod-b', 'pod-a'], 4) }).toEqual({ ...v3 });
  });

  it('any pod name is a key of its own, as it travels to the workers', () => {
    const e = nextPodEpochs(null, ['__proto__', 'constructor'], 7);
    expect(JSON.parse(JSON.stringify(e))).toEqual(JSON.parse('{"__proto__":7,"constructor":7}'));
  });
});
