import { afterAll, beforeAll } from 'vitest';
import { resourcesFor, startMock, startRouter, type MockBackend, type Router, type RouterOptions } from './processes.js';

/** What routerWithMock() started: set once the describe's beforeAll has run. */
export interface RouterWithMock {
  readonly mock: MockBackend;
  readonly router: Router;
}

/**
 * For the tests of the describe it is called in: a mock backend `pod-a` and the built router
 * serving sf-model from it (resourcesFor), started before them and stopped after.
 */
export function routerWithMock(opts: RouterOptions = {}): RouterWithMock {
  const started = {} as { mock: MockBackend; router: Router };
  beforeAll(async () => {
    started.mock = await startMock('pod-a');
    started.router = await startRouter(resourcesFor([{ name: 'pod-a', port: started.mock.port }]), opts);
  });
  afterAll(async () => {
    await started.router?.kill();
    await started.mock?.kill();
  });
  return started;
}
