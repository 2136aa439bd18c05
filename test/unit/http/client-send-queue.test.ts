import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createConnection, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { collectQueued, unsentClientBytes } from '../../../src/http/client-send-queue.js';
import { listenLocal, waitFor } from '../../helpers/processes.js';

const HEAD = '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode';

describe('collectQueued', () => {
  it('takes the sockets on the port that are not listening and have bytes to send, IPv4 and IPv6', () => {
    const table = [
      HEAD,
      '   0: 0100007F:1F90 00000000:0000 0A 00000200:00000004 00:00000000 00000000  1000        0 101 1 0 100 0 0 10 0',
      '   1: 0100007F:1F90 0100007F:D431 01 00001000:00000000 01:00000014 00000000  1000        0 102 1 0 20 4 30 10 -1',
      '   2: 0100007F:1F90 0100007F:D432 01 00000000:00000000 00:00000000 00000000  1000        0 103 1 0 20 4 30 10 -1',
      '   3: 0100007F:1F91 0100007F:D433 01 00000200:00000000 01:00000014 00000000  1000        0 104 1 0 20 4 30 10 -1',
      '   4: 0100007F:1F90 0100007F:D434 08 00000010:00000000 01:00000014 00000000  1000        0 105 1 0 20 4 30 10 -1',
      '',
    ].join('\n');
    const queued = new Map<string, number>();
    collectQueued(table, 0x1f90, queued);
    // 101 listens (whatever its queues say: a listener sends no bytes), 103 has nothing queued, 104 is on another port.
    expect([...queued]).toEqual([['102', 0x1000], ['105', 0x10]]);

    const table6 = [HEAD, '   0: 00000000000000000000000001000000:1F90 00000000000000000000000001000000:D435 01 00000300:00000000 01:00000014 00000000  1000        0 201 1 0 20 4 30 10 -1'].join('\n');
    collectQueued(table6, 0x1f90, queued);
    expect(queued.get('201')).toBe(0x300);
  });
});

const linux = process.platform === 'linux';

describe.runIf(linux)('unsentClientBytes on real sockets', () => {
  it('counts what this process queued to a client that does not read, and nothing once it read it all', async () => {
    let served: Socket | null = null;
    const server = createServer((s) => { served = s; s.on('error', () => undefined); });
    const port = await listenLocal(server);
    const client = createConnection({ host: '127.0.0.1', port });
    client.pause();
    try {
      await waitFor('the connection', () => served !== null);
      expect(unsentClientBytes(port)).toBe(0);
      served!.write(Buffer.alloc(4 << 20, 1));
      const queued = await waitFor('bytes queued', () => { const n = unsentClientBytes(port); return n !== null && n > 0 ? n : 0; });
      expect(queued).toBeGreaterThan(0);
      expect(queued).toBeLessThanOrEqual(4 << 20);
      // The client's own socket (an ephemeral local port) is not one on the port.
      let read = 0;
      client.on('data', (d: Buffer) => { read += d.length; });
      client.resume();
      await waitFor('the whole write read', () => read === 4 << 20);
      await waitFor('nothing queued', () => unsentClientBytes(port) === 0);
    } finally {
      client.destroy();
      server.close();
    }
  });

  it('does not count the sockets of another process on the same port', async () => {
    const child = spawn(process.execPath, ['-e', `
      const s = require('node:net').createServer((c) => { c.on('error', () => {}); c.write(Buffer.alloc(4 << 20, 1)); });
      s.listen(0, '127.0.0.1', () => console.log(s.address().port));
    `], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => { out += d; });
    try {
      const port = Number(await waitFor('the child listening', () => /\d+\n/.exec(out)?.[0]));
      const client = createConnection({ host: '127.0.0.1', port });
      client.on('error', () => undefined);
      client.pause();
      try {
        const theirs = await waitFor('bytes queued in the child', () => {
          const n = unsentClientBytes(port, `/proc/${child.pid}`);
          return n !== null && n > 0 ? n : 0;
        });
        expect(theirs).toBeGreaterThan(0);
        expect(unsentClientBytes(port)).toBe(0);
      } finally {
        client.destroy();
      }
    } finally {
      child.kill();
    }
  });
});

describe('unsentClientBytes without /proc', () => {
  it('is null where the tables cannot be read', () => {
    expect(unsentClientBytes(80, mkdtempSync(join(tmpdir(), 'no-proc-')))).toBeNull();
  });
});
