/**
 * ioredis is loaded by the first Redis limiter of a process (ratelimit/redis/ioredis-module.ts),
 * not by the router's module graph: a worker or a primary without a global limit never loads it.
 * Run in a child Node on the built graph (dist/, which `npm test` builds first), as cli.ts loads it.
 */
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { builtFile } from '../../helpers/built-file.js';

const ROOT = new URL('../../../', import.meta.url).pathname;

/** The built module of `src/<path>.ts`. */
const built = (path: string): string => builtFile(`${path}.js`, `src/${path}.ts`);

function probe(body: string): Record<string, unknown> {
  const script = `
    import { createRequire } from 'node:module';
    const cache = createRequire(import.meta.url).cache;
    const ioredisLoaded = () => Object.keys(cache).some((k) => k.includes('/node_modules/ioredis/'));
    const fast = new Function('o', 'return %HasFastProperties(o)');
    ${body}
  `;
  const out = execFileSync(process.execPath, ['--allow-natives-syntax', '--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' });
  return JSON.parse(out.trim().split('\n').pop()!);
}

describe('ioredis on demand', () => {
  it('the worker\'s and the primary\'s modules load without it; the first Redis limiter loads it, and String.prototype stays fast', () => {
    const worker = built('worker/worker');
    const primary = built('primary/primary');
    const registry = built('ratelimit/registry');
    const r = probe(`
      await import(${JSON.stringify(worker)});
      await import(${JSON.stringify(primary)});
      const afterGraph = ioredisLoaded();
      const { LimiterRegistry } = await import(${JSON.stringify(registry)});
      const { ioredisLoaded: moduleSays } = await import(${JSON.stringify(built('ratelimit/redis/ioredis-module'))});
      const spec = { window: 'minute', inputTokens: 10, outputTokens: null };
      const { parseRedisLimitSettings } = await import(${JSON.stringify(built('ratelimit/redis/settings'))});
      const reg = new LimiterRegistry({ close: async () => {} }, parseRedisLimitSettings({}), { log: () => {} });
      reg.limiterFor({ ...spec, global: null });
      const afterLocal = ioredisLoaded();
      reg.limiterFor({ ...spec, global: { redis: { address: 'redis://127.0.0.1:1' } } });
      const afterGlobal = ioredisLoaded();
      await reg.close();
      console.log(JSON.stringify({ afterGraph, afterLocal, afterGlobal, moduleSays: moduleSays(), fast: fast(String.prototype) }));
      process.exit(0);
    `);
    expect(r).toEqual({ afterGraph: false, afterLocal: false, afterGlobal: true, moduleSays: true, fast: true });
  });
});
