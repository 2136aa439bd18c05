/**
 * What the route API's own CRD accepts, and how its reference router reads it, served the same
 * way from a resources file: another API's documents in the bundle skipped, a rateLimit with no
 * counts (no limit), a route with no rules (serves nothing; the next route of its name does), a
 * match that sets no kind (matches anything) or two (exact read). Each told once in the log.
 * Built router, a mock pod, real HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postJson, resourcesFor, startMock, startRouter, type MockBackend, type Router } from '../helpers/processes.js';

const API = 'networking.serving.volcano.sh/v1alpha1';

describe('route API manifests its CRD accepts', () => {
  let mock: MockBackend;
  let router: Router;
  beforeAll(async () => {
    mock = await startMock('pod-a');
    const extra = `---
apiVersion: apps/v1
kind: Deployment
metadata: { name: llm, namespace: default }
spec: { replicas: 1 }
---
apiVersion: ${API}
kind: ModelRoute
metadata: { name: no-counts, namespace: default }
spec:
  modelName: unlimited
  rateLimit: { unit: second }
  rules:
    - targetModels: [{ modelServerName: sf-server }]
---
apiVersion: ${API}
kind: ModelRoute
metadata: { name: empty, namespace: default }
spec:
  modelName: nothing
  rules: []
---
apiVersion: ${API}
kind: ModelRoute
metadata: { name: empty-first, namespace: default }
spec:
  modelName: shared
  rules: []
---
apiVersion: ${API}
kind: ModelRoute
metadata: { name: then-this, namespace: default }
spec:
  modelName: shared
  rules:
    - targetModels: [{ modelServerName: sf-server }]
---
apiVersion: ${API}
kind: ModelRoute
metadata: { name: matches, namespace: default }
spec:
  modelName: matched
  rules:
    - name: any-tier
      modelMatch: { headers: { x-tier: {} } }
      targetModels: [{ modelServerName: sf-server }]
---
apiVersion: ${API}
kind: ModelRoute
metadata: { name: two-kinds, namespace: default }
spec:
  modelName: two-kinds
  rules:
    - name: exact-read
      modelMatch: { headers: { x-tier: { exact: gold, prefix: g } } }
      targetModels: [{ modelServerName: sf-server }]
`;
    router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }], { extraRoutes: extra }), { workers: 1 });
  });
  afterAll(async () => {
    await router?.kill();
    await mock?.kill();
  });

  it('loads the bundle, telling each reading once', () => {
    const log = router.stderr();
    expect(log).toContain('document 3: Deployment default/llm (apps/v1) is not a resource of the router');
    expect(log).toContain('(ModelRoute default/no-counts): spec.rateLimit: sets neither inputTokensPerUnit nor outputTokensPerUnit: the route has no limit');
    expect(log).toContain('(ModelRoute default/empty): spec.rules: is empty: the route serves no request');
    expect(log).toContain('(ModelRoute default/matches): spec.rules[0].modelMatch.headers.x-tier: sets none of exact, prefix, regex: it matches any value');
    expect(log).toContain('(ModelRoute default/two-kinds): spec.rules[0].modelMatch.headers.x-tier: sets exact and prefix: exact is read');
  });

  it('serves each as the route API reads it', async () => {
    const status = async (model: string, headers: Record<string, string> = {}): Promise<number> => {
      const r = await postJson(`${router.url}/v1/completions`, { model, prompt: 'hi' }, headers);
      await r.text();
      return r.status;
    };
    expect(await status('unlimited')).toBe(200);
    const none = await postJson(`${router.url}/v1/completions`, { model: 'nothing', prompt: 'hi' }, { accept: 'application/json' });
    expect(none.status).toBe(404);
    expect((await none.json() as { error: { code: string } }).error.code).toBe('no_matching_rule');
    expect(await status('shared')).toBe(200);
    expect(await status('matched')).toBe(200);
    expect(await status('matched', { 'x-tier': 'anything' })).toBe(200);
    expect(await status('two-kinds', { 'x-tier': 'gold' })).toBe(200);
    // The prefix is not read: `gx` starts with `g` but is not `gold`.
    expect(await status('two-kinds', { 'x-tier': 'gx' })).toBe(404);
  });
});
