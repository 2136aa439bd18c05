import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { claimPort, PortUnavailableError, portLockName } from '../../../src/primary/port-claim.js';
import { serverPort } from '../../helpers/ports.js';

describe('claimPort', () => {
  it('holds a lock for host and port until released: a second claim is refused, naming the other router', async () => {
    const port = await serverPort();
    const first = await claimPort('127.0.0.1', port);
    await expect(claimPort('127.0.0.1', port)).rejects.toThrow(PortUnavailableError);
    await expect(claimPort('127.0.0.1', port)).rejects.toThrow(`127.0.0.1:${port} is already served by another inference-router`);
    await first.release();
    const again = await claimPort('127.0.0.1', port);
    await again.release();
  });

  it('leaves the port itself free for the workers (the probe is closed)', async () => {
    const port = await serverPort();
    const claim = await claimPort('127.0.0.1', port);
    const s = createServer();
    await new Promise<void>((resolve, reject) => { s.once('error', reject); s.listen(port, '127.0.0.1', () => resolve()); });
    await new Promise((r) => s.close(r));
    await claim.release();
  });

  it('refuses a port another server listens on, and frees its lock when it does', async () => {
    const s = createServer();
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
    const port = (s.address() as { port: number }).port;
    try {
      await expect(claimPort('127.0.0.1', port)).rejects.toThrow(`127.0.0.1:${port} is in use by another process`);
      // The refused claim did not keep its lock: the same address can be claimed once the server is gone.
      const lock = createServer();
      await new Promise<void>((resolve, reject) => { lock.once('error', reject); lock.listen({ path: portLockName('127.0.0.1', port) }, () => resolve()); });
      await new Promise((r) => lock.close(r));
    } finally {
      await new Promise((r) => s.close(r));
    }
  });

  it('names an address no interface has', async () => {
    await expect(claimPort('10.255.255.254', 18_080)).rejects.toThrow('no interface of this machine has address 10.255.255.254');
  });

  it('only probes where abstract sockets do not exist', async () => {
    const port = await serverPort();
    const a = await claimPort('127.0.0.1', port, 'darwin');
    const b = await claimPort('127.0.0.1', port, 'darwin');
    await a.release();
    await b.release();
  });
});
