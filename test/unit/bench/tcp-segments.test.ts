import { describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'node:http';
import { createServer } from 'node:http';
import { tcpCounters, tcpSegmentsSent } from '../../../bench/tcp-segments.js';

const SNMP = [
  'Ip: Forwarding DefaultTTL InReceives',
  'Ip: 1 64 1000',
  'Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors',
  'Tcp: 1 200 120000 -1 10 9 0 1 7 123456 654321 3 0 2 0',
  'Udp: InDatagrams NoPorts',
  'Udp: 5 6',
  '',
].join('\n');

describe('tcp-segments', () => {
  it('reads the Tcp counters by name, not those of the other protocols', () => {
    const c = tcpCounters(SNMP);
    expect(c.get('OutSegs')).toBe(654321);
    expect(c.get('InSegs')).toBe(123456);
    expect(c.get('MaxConn')).toBe(-1);
    expect(c.get('InReceives')).toBeUndefined();
    expect(c.get('InDatagrams')).toBeUndefined();
  });

  it('refuses a Tcp block whose names and values do not line up', () => {
    expect(() => tcpCounters('Tcp: A B C\nTcp: 1 2\n')).toThrow(/3 Tcp names but 2 values/);
  });

  it('gives null for a file it cannot read or without OutSegs', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ir-snmp-'));
    expect(tcpSegmentsSent(join(dir, 'absent'))).toBeNull();
    writeFileSync(join(dir, 'snmp'), 'Tcp: InSegs\nTcp: 5\n');
    expect(tcpSegmentsSent(join(dir, 'snmp'))).toBeNull();
    writeFileSync(join(dir, 'snmp'), SNMP);
    expect(tcpSegmentsSent(join(dir, 'snmp'))).toBe(654321);
  });

  it('counts the segments of real loopback requests on this machine', async () => {
    const before = tcpSegmentsSent();
    if (before === null) return; // no /proc/net/snmp (not Linux): nothing to read
    const server = createServer((_req, res) => res.end('ok'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as { port: number }).port;
    for (let i = 0; i < 20; i++) {
      await new Promise<void>((resolve, reject) => {
        request({ port, host: '127.0.0.1', agent: false }, (res) => { res.resume(); res.on('end', () => resolve()); }).on('error', reject).end();
      });
    }
    await new Promise<void>((r) => server.close(() => r()));
    // Each request on a connection of its own: a handshake, the request, the answer, the closes.
    expect(tcpSegmentsSent()! - before).toBeGreaterThanOrEqual(20 * 4);
  });
});
