/**
 * ioredis, loaded on first use: by the first Redis limiter of the process (a route's
 * `global.redis.address`, at start or at a reload). A router without a global limit never loads
 * it, which takes about a tenth off a worker's start (docs/internals/performance-changes.md,
 * "A worker's start"). The package is CommonJS, so a synchronous require serves the limiter's
 * synchronous construction.
 */
import { createRequire } from 'node:module';

type IoRedis = typeof import('ioredis');

let loaded: IoRedis | null = null;

/** The ioredis module (its `Redis` and `Cluster` classes), required once. */
export function ioredis(): IoRedis {
  if (loaded === null) {
    // Its `class VerbatimString extends String` leaves String.prototype with fast properties
    // since ioredis 6.1.0, which marks it so itself (test/unit/string-prototype-fast.test.ts).
    loaded = createRequire(import.meta.url)('ioredis') as IoRedis;
  }
  return loaded;
}

/** Whether ioredis has been loaded in this process (tests: a router without a global limit never loads it). */
export function ioredisLoaded(): boolean {
  return loaded !== null;
}
