import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/**
 * Bytes the kernel still holds to send (not yet acknowledged) on this process's client
 * connections: its TCP sockets, listeners excluded, whose local port is `port`. Read from Linux's
 * /proc (`net/tcp`, `net/tcp6` and the process's descriptors); null where they cannot be read.
 *
 * What it is for: uWS keeps the bytes of an answer a connection's socket did not take in a buffer
 * of its own, reports nothing on it once the answer has ended, and drops it when the connection is
 * closed or the process exits. It writes that buffer into the socket as soon as the kernel has
 * room, so while it holds bytes the kernel's queue of that socket is not empty; a queue seen empty
 * on every client connection, twice with a turn of the event loop between, means uWS holds none.
 * `proc` is the process's /proc directory (a test may give another).
 */
export function unsentClientBytes(port: number, proc = '/proc/self'): number | null {
  const queued = new Map<string, number>();
  let readable = false;
  for (const table of ['net/tcp', 'net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(`${proc}/${table}`, 'latin1');
    } catch {
      continue;
    }
    readable = true;
    collectQueued(text, port, queued);
  }
  if (!readable) return null;
  if (queued.size === 0) return 0;
  // Only sockets with bytes queued are looked up: those of other processes on the same port (the
  // other workers) are not this process's.
  let total = 0;
  let fds: string[];
  try {
    fds = readdirSync(`${proc}/fd`);
  } catch {
    return null;
  }
  for (const fd of fds) {
    let link: string;
    try {
      link = readlinkSync(`${proc}/fd/${fd}`);
    } catch {
      continue; // closed since the listing
    }
    if (!link.startsWith('socket:[')) continue;
    const bytes = queued.get(link.slice(8, -1));
    if (bytes !== undefined) total += bytes;
  }
  return total;
}

/** TCP state LISTEN in /proc/net/tcp. */
const LISTEN = '0A';

/**
 * Adds to `queued` (socket inode → bytes) each socket of a /proc/net/tcp table whose local port is
 * `port`, that is not listening, and whose send queue is not empty. Columns: sl, local address
 * (hex address:port), remote address, state, tx_queue:rx_queue, ..., inode (the 10th).
 */
export function collectQueued(table: string, port: number, queued: Map<string, number>): void {
  const lines = table.split('\n');
  for (let i = 1; i < lines.length; i++) {
    const cols = lines[i]!.trim().split(/\s+/);
    if (cols.length < 10) continue;
    const local = cols[1]!;
    if (Number.parseInt(local.slice(local.lastIndexOf(':') + 1), 16) !== port) continue;
    if (cols[3] === LISTEN) continue;
    const queues = cols[4]!;
    const tx = Number.parseInt(queues.slice(0, queues.indexOf(':')), 16);
    if (tx > 0) queued.set(cols[9]!, tx);
  }
}
