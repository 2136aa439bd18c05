/**
 * deploy/Dockerfile, checked without a container engine (none runs here, and hadolint is in
 * neither npm nor Debian's packages): the rules below are the ones that matter for this image.
 * deploy/prune-uws.mjs is run on a copy of the installed uWS packages.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { describe, expect, test } from 'vitest';
import { chooseUws } from '../../../src/http/uws-candidates.js';
import { currentUwsRuntime } from '../../../src/http/uws.js';
import { tempDir } from '../../helpers/processes.js';

const ROOT = new URL('../../../', import.meta.url).pathname;
const TEXT = readFileSync(join(ROOT, 'deploy/Dockerfile'), 'utf8');
const IGNORE = readFileSync(join(ROOT, 'deploy/Dockerfile.dockerignore'), 'utf8');
const PKG = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));

interface Instr { op: string; args: string }

/** Instructions, continuation lines joined, comments dropped. */
function instructions(text: string): Instr[] {
  const logical = text.replace(/\\\n/g, ' ').split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#'));
  return logical.map((l) => {
    const m = /^(\w+)\s+(.*)$/.exec(l)!;
    return { op: m[1].toUpperCase(), args: m[2] };
  });
}

const ALL = instructions(TEXT);
const stages: Instr[][] = [];
for (const i of ALL) {
  if (i.op === 'FROM') stages.push([]);
  if (stages.length > 0) stages[stages.length - 1].push(i);
}
const final = stages[stages.length - 1];
/** ARGs declared before the first FROM (usable in FROM lines). */
const args = new Map(ALL.slice(0, ALL.findIndex((x) => x.op === 'FROM')).filter((i) => i.op === 'ARG')
  .map((i) => i.args.split('=') as [string, string]));
const image = (from: string): string => from.split(/\s+/)[0].replace(/^\$\{(\w+)\}$/, (_, n: string) => args.get(n) ?? '');

describe('deploy/Dockerfile', () => {
  test('multi-stage; every FROM is one Node image, by a tag naming its Node major and Debian release (no latest)', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const images = stages.map((s) => image(s[0].args));
    for (const img of images) expect(img).toMatch(/^node:\d+-[a-z]+-slim$/);
    expect(new Set(images).size).toBe(1);
  });

  test('the base image is a current Node LTS that engines allows, on Debian 13 (glibc 2.41 >= 2.38)', () => {
    const [, major, distro] = /^node:(\d+)-([a-z]+)-slim$/.exec(image(stages[0][0].args))!;
    expect(Number(major) % 2).toBe(0);
    expect(Number(major)).toBeGreaterThanOrEqual(24);
    expect(PKG.engines.node).toMatch(new RegExp(`(\\^|>=)${major}\\.`));
    expect(distro).toBe('trixie');
    const rt = { abi: 137, platform: 'linux', arch: 'x64', glibc: '2.41' };
    expect(chooseUws(rt).candidates[0]?.build).toBe('uws-20.57');
  });

  test('the final stage runs as a numeric non-root user, with HEALTHCHECK, EXPOSE and an exec-form ENTRYPOINT', () => {
    const user = final.filter((i) => i.op === 'USER').pop()?.args ?? '';
    expect(user).toMatch(/^\d+(:\d+)?$/);
    expect(Number(user.split(':')[0])).toBeGreaterThan(0);
    const hc = final.find((i) => i.op === 'HEALTHCHECK')?.args ?? '';
    expect(hc).toMatch(/--interval=\S+ .*CMD \[/);
    expect(final.some((i) => i.op === 'EXPOSE' && i.args === '8080')).toBe(true);
    expect(final.find((i) => i.op === 'ENTRYPOINT')?.args).toBe('["node", "dist/cli.js"]');
  });

  test('HEALTHCHECK runs the health check script the build compiles into dist/ (which the final stage copies), by its absolute path under WORKDIR', () => {
    const hc = final.find((i) => i.op === 'HEALTHCHECK')?.args ?? '';
    const cmd = JSON.parse(/CMD (\[.*\])$/.exec(hc)![1]) as string[];
    expect(cmd).toEqual(['node', '/app/dist/healthcheck.js']);
    expect(final.find((i) => i.op === 'WORKDIR')?.args).toBe('/app');
    expect(final.some((i) => i.op === 'COPY' && i.args === '--from=build /app/dist ./dist')).toBe(true);
    // dist/healthcheck.js is src/healthcheck.ts compiled, and src/ is what the build stage compiles.
    expect(stages[0].some((i) => i.op === 'COPY' && i.args === 'src ./src')).toBe(true);
    const script = readFileSync(join(ROOT, 'src/healthcheck.ts'), 'utf8');
    expect(readFileSync(join(ROOT, 'src/config/router-process.ts'), 'utf8')).toContain('/healthz');
    expect(script).toContain("from './config/router-process.js'");
    // No dependency: node's own modules and the router's files only.
    const imports = [...readFileSync(join(ROOT, 'src/config/router-process.ts'), 'utf8').matchAll(/from '([^']+)'/g), ...script.matchAll(/from '([^']+)'/g)].map((m) => m[1]);
    for (const i of imports) expect(i, i).toMatch(/^(node:|\.)/);
  });

  test('OCI labels', () => {
    const labels = final.filter((i) => i.op === 'LABEL').map((i) => i.args).join(' ');
    for (const key of ['title', 'description', 'version', 'revision', 'created', 'licenses', 'base.name']) {
      expect(labels).toContain(`org.opencontainers.image.${key}=`);
    }
    expect(labels).toContain(`org.opencontainers.image.licenses="${PKG.license}"`);
    // The base is the image the stages were built FROM (NODE_IMAGE, which a build arg may change,
    // e.g. to pin a digest), declared again in the final stage so that the label can read it.
    expect(labels).toContain('org.opencontainers.image.base.name="${NODE_IMAGE}"');
    expect(final.some((i) => i.op === 'ARG' && i.args === 'NODE_IMAGE')).toBe(true);
    expect(final[0].args).toBe('${NODE_IMAGE}');
  });

  test('installs reproducibly, drops dev dependencies and prunes uWS binaries in the build stage', () => {
    const runs = stages[0].filter((i) => i.op === 'RUN').map((i) => i.args).join(' && ');
    expect(runs).toContain('npm ci ');
    expect(runs).not.toMatch(/npm install/);
    expect(runs).toContain('npm prune --omit=dev');
    expect(runs).toContain('node deploy/prune-uws.mjs --check');
    for (const i of ALL.filter((x) => x.op === 'RUN')) {
      expect(i.args).not.toMatch(/\bcd\s/);
      if (/apt-get install/.test(i.args)) expect(i.args).toContain('--no-install-recommends');
    }
    for (const i of ALL.filter((x) => x.op === 'WORKDIR')) expect(i.args).toMatch(/^\//);
    expect(ALL.some((i) => i.op === 'ADD')).toBe(false);
  });

  test('every file COPY takes from the context exists and is let through by the .dockerignore', () => {
    const allowed = IGNORE.split('\n').filter((l) => l.startsWith('!')).map((l) => l.slice(1).replace(/\/\*\*$/, ''));
    const sources = ALL.filter((i) => i.op === 'COPY' && !i.args.startsWith('--from')).flatMap((i) => i.args.split(/\s+/).slice(0, -1));
    expect(sources.length).toBeGreaterThan(0);
    for (const s of sources) {
      expect(existsSync(join(ROOT, s)), s).toBe(true);
      expect(allowed, s).toContain(s);
    }
  });
});

describe('deploy/prune-uws.mjs', () => {
  test('keeps only the binary this runtime loads, in a copy of the installed packages', () => {
    // An app dir as the image's build stage has it: package.json, dist/ (the compiled router; the
    // benchmarks left out), and the two uWS packages with every binary replaced by an empty file
    // (the real ones are 200+ MB).
    const app = tempDir('ir-prune-');
    copyFileSync(join(ROOT, 'package.json'), join(app, 'package.json'));
    cpSync(join(ROOT, 'dist'), join(app, 'dist'), { recursive: true, filter: (p) => !p.startsWith(join(ROOT, 'dist/bench')) });
    const require = createRequire(join(ROOT, 'package.json'));
    const before: string[] = [];
    for (const name of ['@btc-vision/uwebsockets.js', 'uWebSockets.js']) {
      let src = dirname(require.resolve(name));
      while (!existsSync(join(src, 'package.json'))) src = dirname(src);
      const dst = join(app, 'node_modules', name);
      cpSync(src, dst, { recursive: true, filter: (p) => !p.endsWith('.node') });
      const walk = (dir: string): void => {
        for (const f of readdirSync(dir, { withFileTypes: true })) {
          const p = join(dir, f.name);
          if (f.isDirectory()) walk(p);
          else if (f.name.endsWith('.node')) {
            const out = join(dst, relative(src, p));
            mkdirSync(dirname(out), { recursive: true });
            writeFileSync(out, '');
            before.push(relative(app, out));
          }
        }
      };
      walk(src);
    }
    expect(before.length).toBeGreaterThan(30);
    const out = execFileSync(process.execPath, [join(ROOT, 'deploy/prune-uws.mjs'), app], { encoding: 'utf8' });
    const chosen = chooseUws(currentUwsRuntime()).candidates[0];
    const kept = relative(app, join(dirname(createRequire(join(app, 'package.json')).resolve(chosen.packageName)), chosen.file));
    expect(out).toContain(`kept ${kept} (${chosen.build}), removed ${before.length - 1} binaries`);
    expect(before.filter((f) => existsSync(join(app, f)))).toEqual([kept]);
  });
});
