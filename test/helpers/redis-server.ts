/**
 * Real redis-server processes for tests, on loopback ports below the kernel's ephemeral range
 * (ports.ts; never 6379): a single server
 * that can be killed, paused and restarted on the same port (plain TCP or TLS only), or a small
 * Redis Cluster. Every process started here is killed when the test process exits.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { clusterPort, serverPort } from './ports.js';

const execFileP = promisify(execFile);
const REDIS_SERVER = process.env.REDIS_SERVER_BIN ?? 'redis-server';
const REDIS_CLI = process.env.REDIS_CLI_BIN ?? 'redis-cli';

/** Tries of a start on a port picked here: it is free when picked, but another process may take it before redis-server binds it. */
const START_TRIES = 3;

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const p of live) p.kill('SIGKILL');
});

/** The certificate files of a TLS server (test-ca.ts makes them). */
export interface RedisTlsFiles {
  certFile: string;
  keyFile: string;
  /** The CA that signed the server certificate: what clients must trust. */
  caFile: string;
}

/**
 * Sends one inline command and returns the first reply line, or throws. With `tlsCa` (PEM),
 * over TLS, trusting that CA.
 */
export async function redisCommand(port: number, command: string, timeoutMs = 1000, tlsCa?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = tlsCa === undefined ? net.connect(port, '127.0.0.1') : tls.connect({ port, host: '127.0.0.1', ca: tlsCa });
    let buf = '';
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`redis ${port}: no reply to ${command} within ${timeoutMs}ms`));
    }, timeoutMs);
    sock.on(tlsCa === undefined ? 'connect' : 'secureConnect', () => sock.write(`${command}\r\n`));
    sock.on('data', (d) => {
      buf += d.toString('utf8');
      const nl = buf.indexOf('\r\n');
      if (nl < 0) return;
      clearTimeout(timer);
      sock.destroy();
      resolve(buf.slice(0, nl));
    });
    sock.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

/** Thrown by a check of waitFor when waiting longer cannot help (the process exited): ends the wait at once. */
class WaitEnded extends Error {}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown = null;
  while (Date.now() < deadline) {
    try {
      if (await check()) return;
    } catch (err) {
      if (err instanceof WaitEnded) throw err;
      last = err;
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out after ${timeoutMs}ms waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ''}`);
}

export class RedisServer {
  /** The port clients use: plain TCP, or TLS when started with `tls`. */
  readonly port: number;
  /** The certificate files when the server speaks TLS only, else null. */
  readonly tls: RedisTlsFiles | null;
  private readonly extraArgs: string[];
  private readonly tlsCa: string | undefined;
  private proc: ChildProcess | null = null;
  private output = '';

  private constructor(port: number, extraArgs: string[], tlsFiles: RedisTlsFiles | null) {
    this.port = port;
    this.extraArgs = extraArgs;
    this.tls = tlsFiles;
    this.tlsCa = tlsFiles === null ? undefined : readFileSync(tlsFiles.caFile, 'utf8');
  }

  /**
   * Starts redis-server on a free port (or `port`) and waits until it answers PING. With `tls`,
   * that port speaks TLS only (no plain port); clients need not present a certificate.
   */
  static async start(opts: { port?: number; args?: string[]; tls?: RedisTlsFiles } = {}): Promise<RedisServer> {
    for (let attempt = 1; ; attempt++) {
      const server = new RedisServer(opts.port ?? (await serverPort()), opts.args ?? [], opts.tls ?? null);
      try {
        await server.startProcess();
        return server;
      } catch (err) {
        // A port picked here may be taken between the check and the bind: try another.
        if (opts.port !== undefined || attempt >= START_TRIES) throw err;
      }
    }
  }

  /** `127.0.0.1:<port>` */
  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.proc !== null;
  }

  private async startProcess(): Promise<void> {
    const listen = this.tls === null
      ? ['--port', String(this.port)]
      : ['--port', '0', '--tls-port', String(this.port), '--tls-cert-file', this.tls.certFile, '--tls-key-file', this.tls.keyFile,
        '--tls-ca-cert-file', this.tls.caFile, '--tls-auth-clients', 'no'];
    const args = [...listen, '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...this.extraArgs];
    const proc = spawn(REDIS_SERVER, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.proc = proc;
    this.output = '';
    live.add(proc);
    proc.stdout?.on('data', (d) => (this.output += d.toString()));
    proc.stderr?.on('data', (d) => (this.output += d.toString()));
    let exited = false;
    proc.once('exit', () => {
      exited = true;
      live.delete(proc);
      if (this.proc === proc) this.proc = null;
    });
    try {
      await waitFor(`redis-server on port ${this.port}`, async () => {
        if (exited) throw new WaitEnded(`redis-server on port ${this.port} exited: ${this.output.slice(-500)}`);
        const reply = await redisCommand(this.port, 'PING', 500, this.tlsCa);
        return reply === '+PONG' || reply.startsWith('-NOAUTH'); // up, with or without requirepass
      }, 10_000);
    } catch (err) {
      proc.kill('SIGKILL');
      throw err;
    }
  }

  /** Kills the server at once (SIGKILL): clients see the connection drop. Counters are lost. */
  async kill(): Promise<void> {
    const proc = this.proc;
    if (proc === null) return;
    if (proc.signalCode === 'SIGSTOP') proc.kill('SIGCONT');
    const gone = new Promise<void>((r) => proc.once('exit', () => r()));
    proc.kill('SIGKILL');
    await gone;
  }

  /** Starts the server again on the same port (after kill). */
  async restart(): Promise<void> {
    if (this.proc !== null) await this.kill();
    await this.startProcess();
  }

  /** Freezes the server (SIGSTOP): connections stay open, commands get no answer. */
  pause(): void {
    this.proc?.kill('SIGSTOP');
  }

  resume(): void {
    this.proc?.kill('SIGCONT');
  }

  /** Runs a command through redis-cli against this server (over TLS if it speaks TLS); returns trimmed stdout. */
  async cli(...args: string[]): Promise<string> {
    const tlsArgs = this.tls === null ? [] : ['--tls', '--cacert', this.tls.caFile];
    const { stdout } = await execFileP(REDIS_CLI, ['-p', String(this.port), ...tlsArgs, ...args]);
    return stdout.trim();
  }

  async stop(): Promise<void> {
    await this.kill();
  }
}


/**
 * A cluster node on a port whose cluster bus port (the port + 10000) is free too (ports.ts): a
 * node that cannot bind its bus port exits ("Failed listening on port ... (cluster)"). A start
 * that fails anyway (a port taken between the check and the bind) is tried again on other ports.
 */
async function startClusterNode(dir: string): Promise<RedisServer> {
  for (let attempt = 1; ; attempt++) {
    const port = await clusterPort();
    try {
      return await RedisServer.start({
        port,
        args: ['--cluster-enabled', 'yes', '--cluster-config-file', join(dir, `nodes-${port}.conf`), '--dir', dir],
      });
    } catch (err) {
      if (attempt >= START_TRIES) throw err;
    }
  }
}

export class RedisClusterServers {
  readonly nodes: RedisServer[];
  private readonly dir: string;

  private constructor(nodes: RedisServer[], dir: string) {
    this.nodes = nodes;
    this.dir = dir;
  }

  /** Comma-separated seed nodes, `127.0.0.1:P1,127.0.0.1:P2,...`. */
  get address(): string {
    return this.nodes.map((n) => n.address).join(',');
  }

  /** Starts `size` (>= 3) masters without replicas, creates the cluster, waits for cluster_state:ok. */
  static async start(size = 3): Promise<RedisClusterServers> {
    const dir = mkdtempSync(join(tmpdir(), 'ir-redis-cluster-'));
    const nodes: RedisServer[] = [];
    try {
      for (let i = 0; i < size; i++) nodes.push(await startClusterNode(dir));
      await execFileP(REDIS_CLI, ['--cluster', 'create', ...nodes.map((n) => n.address), '--cluster-replicas', '0', '--cluster-yes']);
      for (const n of nodes) {
        await waitFor(`cluster_state:ok on ${n.address}`, async () => (await n.cli('cluster', 'info')).includes('cluster_state:ok'), 20_000);
      }
    } catch (err) {
      await Promise.all(nodes.map((n) => n.stop()));
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
    return new RedisClusterServers(nodes, dir);
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.stop()));
    rmSync(this.dir, { recursive: true, force: true });
  }
}
