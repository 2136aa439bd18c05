/**
 * The auth modules (and jose, and the auth file's yaml parser) are imported by a worker or the
 * primary only when ROUTER_AUTH_CONFIG names a file (worker/worker-auth.ts, primary/primary.ts); a
 * worker, which takes the config the primary parsed, never loads the yaml parser for it.
 * Run in a child Node on the built graph (dist/, which `npm test` builds first), with a resolve hook
 * that records every module the child loads: jose is an ES module, so require's cache does not
 * list it.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { builtFile } from '../../helpers/built-file.js';
import { writeModuleLoggers } from '../../helpers/module-log.js';
import { sha256Hex } from './jwks-server.js';
import { parseAuthConfig } from '../../../src/auth/auth-config.js';
import { authConfigToWire } from '../../../src/auth/auth-config-wire.js';

const ROOT = new URL('../../../', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'ir-auth-on-demand-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The built module of `src/<path>.ts`. */
const built = (path: string): string => builtFile(`${path}.js`, `src/${path}.ts`);

/** Records each resolved module in the file named by MODULES_LOG. */
const { hook: HOOK } = writeModuleLoggers(dir);

/** Runs `body` (an ES module) in a child Node; returns what it printed last and every module it loaded, in order, with `--- mark` lines where it printed them. */
function probe(name: string, body: string): { out: string; loaded: string[] } {
  const log = join(dir, `${name}.log`);
  writeFileSync(log, '');
  const script = `const { appendFileSync: note } = await import('node:fs');\nconst mark = (m) => note(process.env.MODULES_LOG, '--- ' + m + '\\n');\n${body}`;
  const out = execFileSync(process.execPath, ['--no-warnings', '--experimental-loader', HOOK, '--input-type=module', '-e', script], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, MODULES_LOG: log },
  });
  return { out: out.trim().split('\n').pop()!, loaded: readFileSync(log, 'utf8').split('\n').filter((l) => l !== '') };
}

/** The lines of `loaded` between the marks `from` (or the start) and `to` (or the end). */
function between(loaded: string[], from: string | null, to: string | null): string[] {
  const start = from === null ? 0 : loaded.indexOf(`--- ${from}`) + 1;
  const end = to === null ? loaded.length : loaded.indexOf(`--- ${to}`);
  expect(start).toBeGreaterThan(from === null ? -1 : 0);
  expect(end).toBeGreaterThanOrEqual(start);
  return loaded.slice(start, end);
}

const isAuth = (url: string): boolean => url.includes('/node_modules/jose/') || url.includes('/dist/auth/auth-') || url.includes('/dist/auth/authenticator') || url.includes('/dist/auth/jwks-cache');

describe('auth modules on demand', () => {
  it('the worker\'s and the primary\'s graphs load no auth module and no jose; a worker given an auth file loads them (not yaml) and authorizes with the config the primary sends', () => {
    const file = join(dir, 'auth.yaml');
    const text = `apiKeys:\n  - { name: team-a, sha256: "${sha256Hex('key-a')}" }\n`;
    writeFileSync(file, text);
    // The primary's answer to the worker's core:auth-wanted, made here: the child loads the worker's modules alone.
    const wire = authConfigToWire(parseAuthConfig(text, file));
    const { out, loaded } = probe(
      'worker',
      `
      process.send = (m) => {
        if (m.t === 'core:auth-wanted') setImmediate(() => process.emit('message', { t: 'core:auth', config: ${JSON.stringify(wire)} }));
        return true;
      };
      await import(${JSON.stringify(built('worker/worker'))});
      await import(${JSON.stringify(built('primary/primary'))});
      mark('graph');
      const { startWorkerAuth } = await import(${JSON.stringify(built('worker/worker-auth'))});
      const none = await startWorkerAuth(null, () => {});
      mark('no file');
      const source = await startWorkerAuth(${JSON.stringify(file)}, () => {});
      const tenant = source.authorize({ authorization: 'Bearer key-a' }, 'any-model');
      let refused = 0;
      try { source.authorize({ authorization: 'Bearer key-b' }, 'any-model'); } catch (err) { refused = err.status; }
      source.stop();
      console.log(JSON.stringify({ none, tenant: tenant.name, refused }));
      process.exit(0);
    `,
    );
    expect(JSON.parse(out)).toEqual({ none: null, tenant: 'team-a', refused: 401 });
    const graph = between(loaded, null, 'graph');
    expect(graph.some((u) => u.includes('/dist/worker/worker.js'))).toBe(true);
    expect(graph.filter(isAuth)).toEqual([]);
    expect(between(loaded, 'graph', 'no file').filter(isAuth)).toEqual([]);
    const withFile = between(loaded, 'no file', null);
    expect(withFile.some((u) => u.includes('/dist/auth/authenticator.js'))).toBe(true);
    expect(withFile.some((u) => u.includes('/node_modules/jose/'))).toBe(true);
    expect(withFile.filter((u) => u.includes('/node_modules/yaml/') || u.includes('/dist/auth/auth-source.js'))).toEqual([]);
  });
});
