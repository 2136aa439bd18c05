/**
 * The workers listen with SO_REUSEPORT (uWS's default), so that all of them share one port. The
 * kernel lets any process of the same user join that group: a second router started on a port a
 * first one serves would start without an error and take part of its traffic. The primary claims
 * the port before it forks a worker, in two steps:
 *
 * - a lock, held while the primary lives: an abstract Unix socket named after host and port
 *   (Linux; the kernel frees it when the process ends, however it ends), so two routers started
 *   at the same moment cannot both pass;
 * - a probe: a plain listen on host:port, closed at once, which fails while any process (another
 *   router, or any server) listens there.
 */
import { createServer, type Server } from 'node:net';

/** The port cannot be this router's: another holds it, or the address or privilege is missing. */
export class PortUnavailableError extends Error {}

/** Holds the claim; release() frees the lock (the router's exit frees it too). */
export interface PortClaim {
  release(): Promise<void>;
}

/** The abstract socket's name for host:port (one router per address and port on this machine). */
export function portLockName(host: string, port: number): string {
  return `\0inference-router:${host}:${port}`;
}

function listenOn(server: Server, options: { path: string } | { host: string; port: number; exclusive: true }): Promise<NodeJS.ErrnoException | null> {
  return new Promise((resolve) => {
    const onError = (err: NodeJS.ErrnoException): void => resolve(err);
    server.once('error', onError);
    server.listen(options, () => {
      server.off('error', onError);
      resolve(null);
    });
  });
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

/**
 * Listens on host:port without SO_REUSEPORT and closes at once: null when that worked, else the
 * error (EADDRINUSE while any process listens there).
 */
export async function probePort(host: string, port: number): Promise<NodeJS.ErrnoException | null> {
  const probe = createServer();
  const err = await listenOn(probe, { host, port, exclusive: true });
  if (err === null) await close(probe);
  return err;
}

/** Claims host:port for this router, or throws PortUnavailableError naming who holds it. */
export async function claimPort(host: string, port: number, platform: NodeJS.Platform = process.platform): Promise<PortClaim> {
  const where = `${host}:${port}`;
  let lock: Server | null = null;
  if (platform === 'linux') {
    lock = createServer();
    const err = await listenOn(lock, { path: portLockName(host, port) });
    if (err !== null) {
      if (err.code === 'EADDRINUSE') {
        throw new PortUnavailableError(`${where} is already served by another inference-router on this machine; ` +
          'its workers and these would share the port, each taking part of the traffic: stop it first, or choose another --port');
      }
      throw new Error(`cannot claim ${where}: ${err.message}`);
    }
    lock.unref();
  }
  const err = await probePort(host, port);
  if (err !== null) {
    if (lock !== null) await close(lock);
    if (err.code === 'EADDRINUSE') throw new PortUnavailableError(`${where} is in use by another process: stop it, or choose another --port`);
    if (err.code === 'EACCES') throw new PortUnavailableError(`${where}: permission denied (ports below 1024 need privileges)`);
    if (err.code === 'EADDRNOTAVAIL') throw new PortUnavailableError(`${where}: no interface of this machine has address ${host} (--host)`);
    // An IPv6 address on a kernel without IPv6: only `::` falls back (listen-host.ts), an address
    // that names an interface cannot.
    if (err.code === 'EAFNOSUPPORT') {
      throw new PortUnavailableError(`${where}: this kernel has no IPv6 (EAFNOSUPPORT): give an IPv4 address, ` +
        'or :: (which listens on 0.0.0.0 where there is no IPv6) (--host)');
    }
    throw new Error(`cannot listen on ${where}: ${err.message}`);
  }
  const held = lock;
  return { release: async () => { if (held !== null) await close(held); } };
}
