/** The resources line of the operational log (src/primary/startup-lines.ts describeResources). */
import { describe, expect, it } from 'vitest';
import { describeResources } from '../../../src/primary/startup-lines.js';
import type { ResourceSnapshot } from '../../../src/config/resource-types.js';

const snapshot = (version: number): ResourceSnapshot => ({
  version,
  routes: [{ kind: 'ModelRoute', namespace: 'default', name: 'r', key: 'default/r', modelName: 'm', loraAdapters: [], rules: [], rateLimit: null, parentRefs: [], creationTimestamp: null }],
  servers: [{ kind: 'ModelServer', namespace: 'default', name: 's', key: 'default/s', model: null, inferenceEngine: null, workloadSelector: null, workloadPort: null, timeoutMs: null, retry: null, endpoints: [] }],
});

describe('describeResources', () => {
  it('names the routes and servers of the snapshot', () => {
    expect(describeResources(snapshot(1), 'file r.yaml')).toEqual({
      message: 'resources loaded from file r.yaml (snapshot 1): 1 routes [default/r], 1 servers [default/s]',
      fields: { applied: true, snapshot: 1, routes: ['default/r'], servers: ['default/s'], untargetedServers: [] },
    });
  });

  it('then the ModelServers no route served targets, left out of it', () => {
    expect(describeResources(snapshot(2), 'file r.yaml', ['default/idle', 'team/x'])).toEqual({
      message: 'resources reloaded from file r.yaml (snapshot 2): 1 routes [default/r], 1 servers [default/s]; '
        + '2 ModelServers no route served targets, not used (their pods neither scraped nor connected to) [default/idle, team/x]',
      fields: { applied: true, snapshot: 2, routes: ['default/r'], servers: ['default/s'], untargetedServers: ['default/idle', 'team/x'] },
    });
  });
});
