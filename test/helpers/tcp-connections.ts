import { readFileSync } from 'node:fs';

/**
 * Established TCP connections whose remote end is `port` on this machine (the clients' ends of
 * connections to a server listening there), counted by the kernel from /proc/net/tcp and tcp6.
 */
export function connectionsTo(port: number): number {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  let n = 0;
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      // f[2]: remote address:port in hex; f[3]: state, 01 = ESTABLISHED.
      if (f.length > 3 && f[2].endsWith(`:${hexPort}`) && f[3] === '01') n++;
    }
  }
  return n;
}
