/**
 * The address a running router listens on, read from the router process itself: its command
 * line and environment as /proc shows them, parsed by the router's own parseSettings, so the port
 * is found whichever way it was given (`--port N`, `--port=N`, ROUTER_PORT, or the default 8080)
 * and can never be parsed differently from the router. Used by the container image's health check
 * (src/healthcheck.ts).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseSettings } from './settings.js';

/** A process's command line or environment as /proc gives them: strings each ended by a NUL. */
export function nulList(text: string): string[] {
  const parts = text.split('\0');
  if (parts.length > 0 && parts[parts.length - 1] === '') parts.pop();
  return parts;
}

/**
 * Node options whose value may follow as the next argument (`-r x`, `--import x`): that argument
 * is no script. The rest of Node's options take none, or only as `--name=value`.
 */
const NODE_OPTIONS_WITH_VALUE = new Set([
  '-r', '--require', '--import', '--loader', '--experimental-loader', '-C', '--conditions',
  '--env-file', '--env-file-if-exists', '--title', '--inspect-port', '--debug-port',
  '--redirect-warnings', '--diagnostic-dir', '--report-dir', '--report-directory',
  '--report-filename', '--cpu-prof-dir', '--cpu-prof-name', '--heap-prof-dir', '--heap-prof-name',
  '--icu-data-dir', '--openssl-config', '--tls-cipher-list', '--disable-warning', '--watch-path',
  '--unhandled-rejections', '--trace-event-categories', '--trace-event-file-pattern',
  '--dns-result-order', '--input-type', '--experimental-default-type', '--secure-heap',
  '--secure-heap-min', '--max-http-header-size', '--stack-trace-limit', '--use-largepages',
]);

/** The router's entry script: dist/cli.js, or the `inference-router` command npm links to it. */
function isRouterScript(a: string): boolean {
  return a === 'cli.js' || a.endsWith('/cli.js') || a === 'inference-router' || a.endsWith('/inference-router');
}

/**
 * The router's own arguments in a process's command line (`node [node options] …/cli.js ARGS`,
 * node options such as `-r x` or `--import x` included), or null when the process is no router.
 */
export function routerArgs(cmdline: string): string[] | null {
  const argv = nulList(cmdline);
  for (let i = 1; i < argv.length; i++) {
    const a = argv[i];
    if (isRouterScript(a)) return argv.slice(i + 1);
    if (!a.startsWith('-')) return null; // a script other than the router's
    if (a === '-e' || a === '--eval' || a === '-p' || a === '--print' || a === '-') return null; // no script at all
    if (NODE_OPTIONS_WITH_VALUE.has(a)) i++; // its value
  }
  return null;
}

/** A process's environment from its /proc environ text. */
export function environment(environ: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const entry of nulList(environ)) {
    const eq = entry.indexOf('=');
    if (eq > 0) env[entry.slice(0, eq)] = entry.slice(eq + 1);
  }
  return env;
}

/**
 * The pid of the router under `proc` (a /proc directory): 1 when PID 1 runs it (the image's
 * ENTRYPOINT), else the lowest pid that runs it (an init process as PID 1, `docker run --init`);
 * null when none does.
 */
export function findRouterPid(proc = '/proc'): number | null {
  if (isRouter(proc, 1)) return 1;
  const pids = readdirSync(proc).filter((n) => /^\d+$/.test(n)).map(Number).sort((a, b) => a - b);
  for (const pid of pids) if (pid !== 1 && pid !== process.pid && isRouter(proc, pid)) return pid;
  return null;
}

function isRouter(proc: string, pid: number): boolean {
  try {
    return routerArgs(readFileSync(join(proc, String(pid), 'cmdline'), 'utf8')) !== null;
  } catch {
    return false; // gone meanwhile, or not ours to read
  }
}

/** Where to ask for a router's health: its port, on loopback when it listens on every interface. */
export interface HealthTarget {
  readonly url: string;
  readonly port: number;
}

/** The /healthz URL of the router started with `args` in `env`. Throws when they do not parse (the router would not have started). */
export function healthTarget(args: readonly string[], env: NodeJS.ProcessEnv): HealthTarget {
  const s = parseSettings(args, env);
  if (s === null) throw new Error('the process was started with --help: it serves nothing');
  return { url: `${s.tls === null ? 'http' : 'https'}://${connectHost(s.host)}:${s.port}/healthz`, port: s.port };
}

/**
 * The host to connect to for a listen address: IPv4 loopback for a wildcard one, an IPv6 literal in
 * brackets. `::` too: the router listens there dual-stack (IPv4 accepted), or on 0.0.0.0 where the
 * kernel has no IPv6 (primary/listen-host.ts), and ::1 has no address where IPv6 is turned off.
 */
export function connectHost(host: string): string {
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

/** The health target of the router running as `pid` under `proc`: its command line, and its environment where readable (else `fallbackEnv`). */
export function processHealthTarget(pid: number, proc = '/proc', fallbackEnv: NodeJS.ProcessEnv = process.env): HealthTarget {
  let cmdline: string;
  try {
    cmdline = readFileSync(join(proc, String(pid), 'cmdline'), 'utf8');
  } catch (err) {
    throw new Error(`no process ${pid} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  const args = routerArgs(cmdline);
  if (args === null) throw new Error(`process ${pid} is not the router (node …/cli.js)`);
  let env = fallbackEnv;
  try {
    env = environment(readFileSync(join(proc, String(pid), 'environ'), 'utf8'));
  } catch {
    // Not readable (another user's process): the health check's own environment, which a
    // container gives every process it starts.
  }
  return healthTarget(args, env);
}
