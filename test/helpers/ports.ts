/**
 * Loopback ports for tests, by what the port is for. The kernel hands out ports of its ephemeral
 * range (32768–60999 here) both for `listen(0)` and as the local port of every outgoing
 * connection. A port picked from that range and left free for a while (a server started later,
 * or killed and started again) may be taken by any test's connection running beside this one,
 * and the server then fails with "Address already in use" (a CI run failed so).
 * Below the range, the ports are split so that no two kinds meet.
 */
import { readFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo } from 'node:net';

/** Single servers that clients may dial before they start or across a restart: [15000, 20000). */
const SERVER_PORTS = { low: 15_000, high: 20_000 };
/** Cluster nodes: [10000, 15000); their bus ports (+10000) are [20000, 25000). */
const CLUSTER_PORTS = { low: 10_000, high: 15_000 };
const CLUSTER_BUS_OFFSET = 10_000;
/** Ports where nothing may listen start here and end at the ephemeral range. */
const UNUSED_PORTS_LOW = 25_000;
const TRIES = 100;

/** A free port from the ephemeral range (bound then released): for a server the test starts now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** The lowest port the kernel hands out for `listen(0)` and outgoing connections (32768 where unreadable). */
export function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > UNUSED_PORTS_LOW ? low : 32768;
  } catch {
    return 32768;
  }
}

/** Whether `port` can be listened on at 127.0.0.1 now. */
export function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.unref();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** Whether a TCP connection to 127.0.0.1:`port` is refused (nothing listens there). */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port });
    s.once('connect', () => { s.destroy(); resolve(false); });
    s.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED'));
  });
}

function randomIn(low: number, high: number): number {
  return low + Math.floor(Math.random() * (high - low));
}

/**
 * A free port below the ephemeral range, for a server that clients may dial before it listens
 * or while it restarts (redis-server killed and started again on the same port).
 */
export async function serverPort(): Promise<number> {
  for (let i = 0; i < TRIES; i++) {
    const port = randomIn(SERVER_PORTS.low, SERVER_PORTS.high);
    if (await portFree(port)) return port;
  }
  throw new Error(`no free port in [${SERVER_PORTS.low}, ${SERVER_PORTS.high}) after ${TRIES} tries`);
}

/** A free port for a cluster node whose cluster bus port (the port + 10000) is free as well. */
export async function clusterPort(): Promise<number> {
  for (let i = 0; i < TRIES; i++) {
    const port = randomIn(CLUSTER_PORTS.low, CLUSTER_PORTS.high);
    if ((await portFree(port)) && (await portFree(port + CLUSTER_BUS_OFFSET))) return port;
  }
  throw new Error(`no free cluster port in [${CLUSTER_PORTS.low}, ${CLUSTER_PORTS.high}) after ${TRIES} tries`);
}

/**
 * A port for a pod that must stay unreachable: nothing listens there, and it lies below the
 * kernel's ephemeral range and apart from the servers' ports, so nothing a test beside this one
 * starts can take it while the test uses it.
 */
export async function unusedPort(): Promise<number> {
  const low = ephemeralLow();
  for (let i = 0; i < TRIES; i++) {
    const port = randomIn(UNUSED_PORTS_LOW, low);
    if (await refused(port)) return port;
  }
  throw new Error(`no unused port in [${UNUSED_PORTS_LOW}, ${low}) after ${TRIES} tries`);
}
