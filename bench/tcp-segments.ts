/**
 * TCP segments the machine sent, from the kernel's counters (/proc/net/snmp, `Tcp: OutSegs`):
 * read before and after a round, over the round's requests, how many segments a request cost on
 * the loopback network, all processes together (client, proxy, backend). A proxy that sends an
 * answer in two writes, or makes the kernel send pure ACKs (delayed ACKs that fire, a window
 * update), costs more than four a request (request and answer on each leg), and each segment is
 * kernel work on the sender's CPU and a wake-up of the receiver. System-wide: traffic of other
 * processes in the round counts too (an idle machine adds next to none).
 */
import { readFileSync } from 'node:fs';

/** The `Tcp:` counters of /proc/net/snmp's text (a line of names, then a line of values), by name. */
export function tcpCounters(snmp: string): Map<string, number> {
  const lines = snmp.split('\n');
  const counters = new Map<string, number>();
  for (let i = 0; i + 1 < lines.length; i++) {
    if (!lines[i].startsWith('Tcp:') || !lines[i + 1].startsWith('Tcp:')) continue;
    const names = lines[i].trim().split(/\s+/);
    const values = lines[i + 1].trim().split(/\s+/);
    if (names.length !== values.length) throw new Error(`/proc/net/snmp: ${names.length - 1} Tcp names but ${values.length - 1} values`);
    for (let j = 1; j < names.length; j++) counters.set(names[j], Number(values[j]));
    return counters;
  }
  return counters;
}

/** TCP segments sent so far on this machine (OutSegs), or null where /proc/net/snmp is not readable or has no such counter. */
export function tcpSegmentsSent(file = '/proc/net/snmp'): number | null {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return null;
  }
  const sent = tcpCounters(text).get('OutSegs');
  return sent === undefined || !Number.isFinite(sent) ? null : sent;
}
