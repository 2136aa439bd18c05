import { spawn, spawnSync } from 'node:child_process';
import { connect, createServer } from 'node:net';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI, resourcesFor, ROOT, startRouter, tempDir } from '../helpers/processes.js';
import { serverPort } from '../helpers/ports.js';

const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

function run(args: string[], env: NodeJS.ProcessEnv = {}) {
  return spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 20_000 });
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? sourceFiles(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** Environment variables of the router: its prefixes, as written in docs or code. */
const VARIABLE = /\b(?:ROUTER|ACCESS_LOG|RATE_LIMIT|REDIS|NODE_EXTRA)_[A-Z0-9_]*[A-Z0-9]\b/g;

describe('--version and --help', () => {
  it('--version prints the package version and exits 0', () => {
    const r = run(['--version']);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(`inference-router ${VERSION}\n`);
  });

  it('--help names every variable of docs/configuration.md and every one the sources read', () => {
    const r = run(['--help']);
    expect(r.status).toBe(0);
    const help = r.stdout;
    const docs = readFileSync(join(ROOT, 'docs/configuration.md'), 'utf8');
    const documented = new Set(docs.match(VARIABLE));
    expect(documented.size).toBeGreaterThan(25);
    for (const name of ['ROUTER_AUTH_CONFIG', 'REDIS_PASSWORD', 'REDIS_TLS_CA_FILE', 'ROUTER_DRAIN_DELAY', 'ROUTER_LOG_FORMAT']) {
      expect(documented).toContain(name);
    }
    // Names read in src/: env.NAME, env['NAME'] or a parser's (env, 'NAME'); ROUTER_WORKER is the internal worker marker.
    const read = new Set<string>();
    for (const f of sourceFiles(join(ROOT, 'src'))) {
      for (const m of readFileSync(f, 'utf8').matchAll(/(?:env\.|env\[['"]|env, ['"])((?:ROUTER|ACCESS_LOG|RATE_LIMIT|REDIS)_[A-Z0-9_]*[A-Z0-9])\b/g)) {
        if (m[1] !== 'ROUTER_WORKER') read.add(m[1]);
      }
    }
    expect(read.size).toBeGreaterThan(20);
    const missing = [...documented, ...read].filter((n) => !new RegExp(`\\b${n}\\b`).test(help));
    expect(missing).toEqual([]);
    const undocumented = [...read].filter((n) => !documented.has(n));
    expect(undocumented).toEqual([]);
  });

  it('--help groups the variables as docs/configuration.md does, in the same order', () => {
    const help = run(['--help']).stdout;
    const docs = readFileSync(join(ROOT, 'docs/configuration.md'), 'utf8');
    const section = docs.slice(docs.indexOf('## Command line and environment'), docs.indexOf('\n## ', docs.indexOf('## Command line and environment') + 5));
    const groups = [...section.matchAll(/^### (.+?)(?: \(\[.*)?$/gm)].map((m) => m[1]);
    expect(groups.length).toBeGreaterThanOrEqual(8);
    const at = groups.map((g) => help.indexOf(`\n ${g}\n`));
    expect(at.filter((i) => i < 0), `groups missing from --help: ${groups.filter((_, i) => at[i] < 0)}`).toEqual([]);
    expect([...at].sort((x, y) => x - y)).toEqual(at);
    // Each variable is under the group that documents it.
    for (let g = 0; g < groups.length; g++) {
      const docsPart = section.slice(section.indexOf(`### ${groups[g]}`), g + 1 < groups.length ? section.indexOf(`### ${groups[g + 1]}`) : undefined);
      const helpPart = help.slice(at[g], g + 1 < groups.length ? at[g + 1] : undefined);
      const flagsPart = help.slice(0, at[0]);
      for (const name of new Set(docsPart.match(VARIABLE))) {
        if (name === 'NODE_EXTRA_CA_CERTS') continue;
        expect(helpPart.includes(name) || flagsPart.includes(`[${name}`), `${name} under ${groups[g]}`).toBe(true);
      }
    }
  });
});

describe('start-up checks', () => {
  it('a resources file given without --resources, or a misspelt flag, exits 2 saying what to type', () => {
    const r1 = run(['examples/resources.yaml']);
    expect(r1.status).toBe(2);
    expect(r1.stderr).toBe('inference-router: unexpected argument "examples/resources.yaml": the router takes options only; '
      + 'give a resources file as --resources examples/resources.yaml\nRun with --help for usage.\n');
    const r2 = run(['--resource', 'examples/resources.yaml']);
    expect(r2.status).toBe(2);
    expect(r2.stderr).toBe('inference-router: unknown option "--resource"; did you mean --resources?\nRun with --help for usage.\n');
    const r3 = run(['--resources', 'examples/resources.yaml', '--prot', '18090']);
    expect(r3.status).toBe(2);
    expect(r3.stderr).toBe('inference-router: unknown option "--prot"; did you mean --port?\nRun with --help for usage.\n');
  });

  it('a bad variable that a flag overrides (ROUTER_PORT=abc with --port) exits 2 naming it, as with no flag', async () => {
    const port = String(await serverPort());
    const r = run(['--resources', 'examples/resources.yaml', '--port', port, '--workers', '1'], { ROUTER_PORT: 'abc' });
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toBe('inference-router: ROUTER_PORT: expected an integer from 1 to 65535; got "abc" '
      + '(--port overrides it, but a bad value is refused all the same)\nRun with --help for usage.\n');
  });

  it('with the operational log in JSON, a bad setting exits 2 with one JSON line of the log, as the router\'s other lines', () => {
    for (const env of [{ ROUTER_LOG_FORMAT: 'json' }, { ACCESS_LOG_FORMAT: 'json' }]) {
      const r = run(['--resources', 'examples/resources.yaml'], { ...env, ROUTER_PORT: 'abc' });
      expect(r.status, r.stderr).toBe(2);
      const lines = r.stderr.trimEnd().split('\n');
      expect(lines).toHaveLength(1);
      expect(JSON.parse(lines[0])).toMatchObject({ level: 'error', process: 'primary', event: 'exit', code: 2,
        message: 'ROUTER_PORT: expected an integer from 1 to 65535; got "abc". Run with --help for usage.; exit 2' });
    }
    // A bad format setting itself is told as text.
    const bad = run(['--resources', 'examples/resources.yaml'], { ROUTER_LOG_FORMAT: 'yaml' });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/^inference-router: ROUTER_LOG_FORMAT: expected json or text; got "yaml"\nRun with --help for usage.\n$/);
  });

  it('a bad setting of any part (access log, rate limits, tokenizer) exits 2 naming it, pointing at --help as a bad flag does', () => {
    for (const [name, value] of [['ACCESS_LOG_FORMAT', 'jsonl'], ['RATE_LIMIT_REDIS_FAILURE_MODE', 'fail'], ['ROUTER_TOKEN_ESTIMATOR', 'words'], ['ROUTER_PORT', 'http']]) {
      const r = run(['--resources', 'x.yaml'], { [name]: value });
      expect(r.status, name).toBe(2);
      expect(r.stderr, name).toMatch(new RegExp(`^inference-router: ${name}\\b.*"${value}".*\\nRun with --help for usage\\.\\n$`));
    }
  });

  it('a duration given as a bare number below 1000 starts the router with one warn line of the operational log for it', async () => {
    // RATE_LIMIT_REDIS_TIMEOUT=80 cannot mean 80 s (at most 60 s): no warning; ROUTER_DRAIN_DELAY=0 (the helper's) neither.
    const router = await startRouter(resourcesFor([{ name: 'p', port: 1 }]), {
      workers: 2, env: { ROUTER_UPSTREAM_TIMEOUT: '5', RATE_LIMIT_REDIS_TIMEOUT: '80', ROUTER_LOG_FORMAT: 'json' },
    });
    try {
      const lines = router.stderr().trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(lines.filter((l) => l.level === 'warn'), router.stderr()).toEqual([expect.objectContaining({
        process: 'primary', event: 'start', variable: 'ROUTER_UPSTREAM_TIMEOUT',
        message: 'ROUTER_UPSTREAM_TIMEOUT=5 is read as 5 milliseconds: a number without a unit is milliseconds; write 5s for seconds, or 5ms to keep milliseconds without this warning',
      })]);
    } finally {
      await router.stop();
    }
  });

  it('ROUTER_ALLOW_UWS_FALLBACK=true (the JavaScript fallback, which cannot carry the answers) exits 2 saying what to run instead; false starts as before', () => {
    const r = run(['--resources', 'x.yaml'], { ROUTER_ALLOW_UWS_FALLBACK: 'true' });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^inference-router: ROUTER_ALLOW_UWS_FALLBACK=true is no longer supported: the router runs only on a native uWebSockets\.js build .*glibc >= 2\.38.*Unset it, or set it to false\.\nRun with --help for usage\.\n$/);
    // false passes the settings: the start stops further on, at the missing resources file.
    const accepted = run(['--resources', 'x.yaml', '--workers', '1'], { ROUTER_ALLOW_UWS_FALLBACK: 'false' });
    expect(accepted.stderr).toContain('x.yaml');
    expect(accepted.stderr).not.toContain('ROUTER_ALLOW_UWS_FALLBACK');
  });

  it('a ROUTER_GATEWAY that is not <namespace>/<name> exits 2 naming it and the form, with either source', () => {
    for (const [args, value] of [[['--resources', 'examples/resources.yaml'], 'kthena-gateway-8081'], [['--kubernetes'], 'Default/GW']] as const) {
      const r = run([...args, '--workers', '1'], { ROUTER_GATEWAY: value });
      expect(r.status, r.stderr).toBe(2);
      expect(r.stderr).toBe(`inference-router: ROUTER_GATEWAY: expected the Gateway whose ModelRoutes this router serves, as <namespace>/<name> of lower-case letters, digits, '-' (and '.' in the name), e.g. kthena-system/default; got "${value}"\nRun with --help for usage.\n`);
    }
  });

  it('ROUTER_LOG_FORMAT and ROUTER_DRAIN_DELAY are validated: exit 2 naming them', () => {
    const r1 = run(['--resources', 'x.yaml'], { ROUTER_LOG_FORMAT: 'xml' });
    expect(r1.status).toBe(2);
    expect(r1.stderr).toContain('ROUTER_LOG_FORMAT');
    const r2 = run(['--resources', 'x.yaml'], { ROUTER_DRAIN_DELAY: 'later' });
    expect(r2.status).toBe(2);
    expect(r2.stderr).toContain('ROUTER_DRAIN_DELAY');
  });

  it('a resources path that is missing or a directory stops the router with exit 2 saying what --resources takes', async () => {
    const port = String(await serverPort());
    const dir = tempDir();
    const missing = spawnSync(process.execPath, [CLI, '--resources', 'no-such.yaml', '--workers', '1', '--port', port],
      { encoding: 'utf8', cwd: dir, env: { ...process.env, ROUTER_LOG_FORMAT: 'json' }, timeout: 20_000 });
    expect(missing.status, missing.stderr).toBe(2);
    expect((JSON.parse(missing.stderr.trim().split('\n').at(-1)!) as { message: string }).message).toBe(
      `cannot start: no-such.yaml: no such resources file (looked for ${join(dir, 'no-such.yaml')}); give the path of a YAML file `
      + 'of ModelRoute/ModelServer resources to --resources or ROUTER_RESOURCES, e.g. examples/resources.yaml; exit 2');
    const directory = run(['--resources', dir, '--workers', '1', '--port', port], { ROUTER_LOG_FORMAT: 'json' });
    expect(directory.status, directory.stderr).toBe(2);
    expect((JSON.parse(directory.stderr.trim().split('\n').at(-1)!) as { message: string }).message).toBe(
      `cannot start: ${dir}: is a directory; --resources (ROUTER_RESOURCES) takes one YAML file of ModelRoute/ModelServer resources; exit 2`);
  });

  it('--kubernetes with a KUBECONFIG that is missing, not YAML or without a current cluster exits 2 naming it', async () => {
    const port = String(await serverPort());
    const dir = tempDir();
    writeFileSync(join(dir, 'broken.yaml'), 'clusters: [\n');
    writeFileSync(join(dir, 'empty.yaml'), 'apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n');
    const cases = [
      [join(dir, 'missing.yaml'), `cannot load the cluster configuration from KUBECONFIG=${join(dir, 'missing.yaml')}: ENOENT`],
      [join(dir, 'broken.yaml'), `cannot load the cluster configuration from KUBECONFIG=${join(dir, 'broken.yaml')}: `],
      [join(dir, 'empty.yaml'), `the cluster configuration from KUBECONFIG=${join(dir, 'empty.yaml')} has no current cluster`],
    ] as const;
    for (const [kubeconfig, message] of cases) {
      const r = run(['--kubernetes', '--workers', '1', '--port', port], { KUBECONFIG: kubeconfig, ROUTER_LOG_FORMAT: 'json' });
      expect(r.status, r.stderr).toBe(2);
      const last = JSON.parse(r.stderr.trim().split('\n').at(-1)!) as { event: string; message: string };
      expect(last.event).toBe('exit');
      expect(last.message).toContain(`cannot start: --kubernetes: ${message}`);
      expect(r.stderr).not.toMatch(/"event":"workers"/);
    }
  });

  it('an ACCESS_LOG_OUTPUT that cannot be opened stops the primary with exit 2 before any worker starts', async () => {
    const port = String(await serverPort());
    const dir = tempDir();
    const file = join(dir, 'resources.yaml');
    writeFileSync(file, resourcesFor([{ name: 'p', port: 1 }]));
    for (const output of [join(dir, 'no-such-dir', 'access.log'), dir]) {
      const r = run(['--resources', file, '--workers', '1', '--port', port], { ACCESS_LOG_OUTPUT: output, ROUTER_LOG_FORMAT: 'json' });
      expect(r.status, r.stderr).toBe(2);
      const lines = r.stderr.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(lines.at(-1)).toMatchObject({ level: 'error', event: 'exit', code: 2, process: 'primary' });
      expect(String(lines.at(-1)!.message)).toContain('ACCESS_LOG_OUTPUT');
      expect(String(lines.at(-1)!.message)).toContain(output);
      expect(lines.some((l) => l.process === 'worker' || l.event === 'workers')).toBe(false);
    }
  });

  it('an ACCESS_LOG_OUTPUT that is a Unix socket (also /dev/stdout when stdout is one, as under the systemd journal) stops the primary with exit 2', async () => {
    const port = String(await serverPort());
    const dir = tempDir();
    const file = join(dir, 'resources.yaml');
    writeFileSync(file, resourcesFor([{ name: 'p', port: 1 }]));
    const sock = join(dir, 'journal.sock');
    const server = createServer((c) => c.resume());
    await new Promise<void>((resolve) => server.listen(sock, resolve));
    const stdout = connect(sock);
    await new Promise<void>((resolve) => stdout.once('connect', resolve));
    try {
      for (const output of [sock, '/dev/stdout']) {
        const child = spawn(process.execPath, [CLI, '--resources', file, '--workers', '1', '--port', port], {
          stdio: ['ignore', stdout, 'pipe'], env: { ...process.env, ACCESS_LOG_OUTPUT: output, ROUTER_LOG_FORMAT: 'json' },
        });
        let stderr = '';
        child.stderr!.setEncoding('utf8').on('data', (d: string) => { stderr += d; });
        // Started anyway, the router would serve without writing a record: stop it after a while.
        const kill = setTimeout(() => child.kill('SIGKILL'), 8000);
        const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
        clearTimeout(kill);
        expect(code, stderr).toBe(2);
        const last = JSON.parse(stderr.trim().split('\n').at(-1)!) as Record<string, unknown>;
        expect(last).toMatchObject({ level: 'error', event: 'exit', code: 2, process: 'primary' });
        expect(String(last.message)).toContain(`ACCESS_LOG_OUTPUT: cannot append to ${JSON.stringify(output)}: it is a socket`);
      }
    } finally {
      stdout.destroy();
      server.close();
    }
  });
});
