/** Command line and node:cluster start-up shared by the reference proxies. */
import cluster from 'node:cluster';

export interface ReferenceArgs {
  readonly port: number;
  readonly upstream: string;
  readonly workers: number;
}

export function parseReferenceArgs(argv: readonly string[]): ReferenceArgs {
  const got = new Map<string, string>();
  for (let i = 0; i < argv.length; i += 2) {
    if (!['--port', '--upstream', '--workers'].includes(argv[i]) || argv[i + 1] === undefined) {
      throw new Error(`usage: --port P --upstream http://HOST:PORT --workers N (bad argument ${JSON.stringify(argv[i])})`);
    }
    got.set(argv[i], argv[i + 1]);
  }
  const port = Number(got.get('--port'));
  const workers = Number(got.get('--workers') ?? 1);
  const upstream = got.get('--upstream') ?? '';
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`--port: expected 1..65535, got ${got.get('--port')}`);
  if (!Number.isInteger(workers) || workers < 1) throw new Error(`--workers: expected a positive integer, got ${got.get('--workers')}`);
  if (!/^http:\/\/[^/]+$/.test(upstream)) throw new Error(`--upstream: expected http://HOST:PORT, got ${JSON.stringify(upstream)}`);
  return { port, upstream, workers };
}

/** Forks the workers, prints "<name> ready with N workers" once each reported listening, ends them on SIGTERM. */
export function startReferencePrimary(name: string, workers: number): void {
  let listening = 0;
  for (let i = 0; i < workers; i++) {
    const w = cluster.fork();
    w.on('message', (m: { t?: string }) => {
      if (m?.t === 'listening' && ++listening === workers) process.stdout.write(`${name} ready with ${workers} workers\n`);
    });
    w.on('exit', (code) => {
      if (!stopping) {
        process.stderr.write(`${name}: worker exited (${code}); stopping\n`);
        process.exit(1);
      }
    });
  }
  let stopping = false;
  process.on('SIGTERM', () => {
    stopping = true;
    for (const w of Object.values(cluster.workers ?? {})) w?.kill('SIGKILL');
    process.exit(0);
  });
}
