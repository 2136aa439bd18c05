/** The resources line of the operational log (src/primary/startup-lines.ts describeResources). */
import { describe, expect, it } from 'vitest';
import { describeResources, NAMES_LISTED } from '../../../src/primary/startup-lines.js';
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
      fields: { applied: true, snapshot: 1, routes: ['default/r'], servers: ['default/s'], untargetedServers: [], routeCount: 1, serverCount: 1, untargetedCount: 0 },
    });
  });

  it('then the ModelServers no route served targets, left out of it', () => {
    expect(describeResources(snapshot(2), 'file r.yaml', ['default/idle', 'team/x'])).toEqual({
      message: 'resources reloaded from file r.yaml (snapshot 2): 1 routes [default/r], 1 servers [default/s]; '
        + '2 ModelServers no route served targets, not used (their pods neither scraped nor connected to) [default/idle, team/x]',
      fields: { applied: true, snapshot: 2, routes: ['default/r'], servers: ['default/s'], untargetedServers: ['default/idle', 'team/x'], routeCount: 1, serverCount: 1, untargetedCount: 2 },
    });
  });

  it('a large fleet: the first 50 names of each kind, then how many more; the counts whole', () => {
    const many = snapshot(3);
    const routes = Array.from({ length: 20_000 }, (_, i) => ({ ...many.routes[0], name: `r${i}`, key: `default/r${i}` }));
    const line = describeResources({ ...many, routes }, 'file big.yaml');
    expect(line.message).toMatch(/^resources reloaded from file big\.yaml \(snapshot 3\): 20000 routes \[default\/r0, default\/r1, .*, default\/r49, … and 19950 more\], 1 servers \[default\/s\]$/);
    expect(line.message.length).toBeLessThan(1_000);
    expect(line.fields).toMatchObject({ routeCount: 20_000, serverCount: 1 });
    expect(line.fields.routes).toHaveLength(NAMES_LISTED);
  });
});
