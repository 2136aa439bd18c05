/**
 * String.prototype keeps V8's fast properties in a router process, with every module a router
 * can load: the primary's and the worker's graphs, ioredis (a global limit) and the Kubernetes
 * client (--kubernetes). A prototype in dictionary mode makes every string method call of the
 * router's optimised code a generic lookup (about 8% of a worker's instructions, when ioredis 6.0's
 * `class VerbatimString extends String` did this: docs/internals/performance-changes.md, "String
 * methods inlined again"). ioredis 6.1.0 marks the prototype fast itself after its subclass, so the
 * router's own call that did it went. Should a dependency (or V8) bring the slow mode back, this
 * fails: restore a call that loads a method through a `String` wrapper object after the loads.
 * Run in a child Node with --allow-natives-syntax (%HasFastProperties is V8's own check) on the
 * built modules (dist/, which `npm test` builds first).
 */
import { execFileSync } from 'node:child_process';
import { expect, test } from 'vitest';
import { builtFile } from '../helpers/built-file.js';

const ROOT = new URL('../../', import.meta.url).pathname;

/** The built module of `src/<path>.ts`. */
const built = (path: string): string => builtFile(`${path}.js`, `src/${path}.ts`);

function probe(body: string): Record<string, boolean> {
  const script = `
    const fast = new Function('o', 'return %HasFastProperties(o)');
    ${body}
  `;
  const out = execFileSync(process.execPath, ['--allow-natives-syntax', '--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' });
  return JSON.parse(out.trim().split('\n').pop()!);
}

test('String.prototype has fast properties after the router\'s modules, ioredis and the Kubernetes client load, and keeps them after a later subclass', () => {
  const r = probe(`
    const before = fast(String.prototype);
    await import(${JSON.stringify(built('primary/primary'))});
    await import(${JSON.stringify(built('worker/worker'))});
    const afterGraph = fast(String.prototype);
    const { ioredis } = await import(${JSON.stringify(built('ratelimit/redis/ioredis-module'))});
    ioredis();
    const afterIoredis = fast(String.prototype);
    await import('@kubernetes/client-node');
    const afterKubernetes = fast(String.prototype);
    class Later extends String {}
    void Later;
    console.log(JSON.stringify({ before, afterGraph, afterIoredis, afterKubernetes, afterLaterSubclass: fast(String.prototype) }));
    process.exit(0);
  `);
  expect(r).toEqual({ before: true, afterGraph: true, afterIoredis: true, afterKubernetes: true, afterLaterSubclass: true });
});

test('the check can fail: a subclass of String with nothing to mark the prototype fast leaves it slow', () => {
  // What ioredis 6.0 did on load (its `class VerbatimString extends String`, without 6.1's store).
  const r = probe(`
    class Verbatim extends String {}
    void Verbatim;
    console.log(JSON.stringify({ afterSubclass: fast(String.prototype) }));
  `);
  expect(r).toEqual({ afterSubclass: false });
});
