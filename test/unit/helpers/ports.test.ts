import { describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:net';
import { clusterPort, ephemeralLow, freePort, portFree, serverPort, unusedPort } from '../../helpers/ports.js';

function listen(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(port, '127.0.0.1', () => resolve(s));
  });
}

describe('test ports', () => {
  it('serverPort, clusterPort and unusedPort lie below the kernel\'s ephemeral range, in ranges of their own', async () => {
    const low = ephemeralLow();
    for (let i = 0; i < 20; i++) {
      const server = await serverPort();
      const cluster = await clusterPort();
      const unused = await unusedPort();
      expect(server).toBeGreaterThanOrEqual(15_000);
      expect(server).toBeLessThan(20_000);
      expect(cluster).toBeGreaterThanOrEqual(10_000);
      expect(cluster + 10_000).toBeLessThan(25_000);
      expect(unused).toBeGreaterThanOrEqual(25_000);
      expect(unused).toBeLessThan(low);
    }
  });

  it('a port picked for a server can be listened on, and one in use is not free', async () => {
    const port = await serverPort();
    const s = await listen(port);
    try {
      expect(await portFree(port)).toBe(false);
    } finally {
      await new Promise<void>((r) => s.close(() => r()));
    }
    expect(await portFree(port)).toBe(true);
  });

  it('freePort gives a port of the ephemeral range that can be listened on', async () => {
    const port = await freePort();
    expect(port).toBeGreaterThanOrEqual(ephemeralLow());
    const s = await listen(port);
    await new Promise<void>((r) => s.close(() => r()));
  });
});
