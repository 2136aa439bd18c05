/**
 * ioredis, loaded on first use: by the first Redis limiter of the process (a route's
 * `global.redis.address`, at start or at a reload). A router without a global limit never loads
 * it, which takes about a tenth off a worker's start (docs/internals/performance-changes.md,
 * "A worker's start"). The package is CommonJS, so a synchronous require serves the limiter's
 * synchronous construction.
 */
import { createRequire } from 'node:module';
import { keepStringPrototypeFast } from '../../fast-string-prototype.js';

type IoRedis = typeof import('ioredis');

let loaded: IoRedis | null = null;

/** The ioredis module (its `Redis` and `Cluster` classes), required once. */
export function ioredis(): IoRedis {
  if (loaded === null) {
    loaded = createRequire(import.meta.url)('ioredis') as IoRedis;
    // Its `class VerbatimString extends String` would put String.prototype into dictionary mode
    // when nothing had kept it fast before (fast-string-prototype.ts); cli.ts's call comes first
    // in a router process, this one covers any other caller.
    keepStringPrototypeFast();
  }
  return loaded;
}

/** Whether ioredis has been loaded in this process (tests: a router without a global limit never loads it). */
export function ioredisLoaded(): boolean {
  return loaded !== null;
}
