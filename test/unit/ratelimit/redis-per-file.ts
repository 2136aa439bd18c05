import { afterAll, afterEach, beforeAll } from 'vitest';
import { RedisServer } from '../../helpers/redis-server.js';

/**
 * One real redis-server for a test file of the global limit: started before its tests and
 * stopped after them. After each test `reset` runs (the file's injected clock set back), then the
 * limiters the test left in `open` are closed and the list emptied.
 */
export function redisServerPerFile(open: { close(): Promise<void> }[], reset: () => void): { readonly server: RedisServer } {
  let server: RedisServer | undefined;
  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterEach(async () => {
    reset();
    await Promise.all(open.splice(0).map((l) => l.close()));
  });
  afterAll(async () => {
    await server?.stop();
  });
  return {
    get server(): RedisServer {
      if (server === undefined) throw new Error('the redis-server of this file is not started (used outside a test?)');
      return server;
    },
  };
}
