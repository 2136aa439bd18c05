import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postJson, resourcesFor, startRouter, tempDir, unusedPort, waitFor } from '../helpers/processes.js';

/**
 * A file system that fills up while the router writes its access log: a small tmpfs, mounted
 * for the test (it needs the privilege to mount; without it the test is skipped).
 */
const disk = tempDir('ir-small-disk-');
const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=256k', 'tmpfs', disk]).status === 0;

afterAll(() => {
  if (mounted) spawnSync('umount', [disk]);
});

async function droppedRecords(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`, { headers: { connection: 'close' } })).text();
  const m = /^inference_router_access_log_dropped_total (\d+)$/m.exec(text);
  if (m === null) throw new Error(`no dropped counter in /metrics:\n${text}`);
  return Number(m[1]);
}

describe.skipIf(!mounted)('access log to a file whose disk fills up (a 256 KiB tmpfs)', () => {
  let port = 0;
  beforeAll(async () => {
    port = await unusedPort();
  });

  it('a write cut short by the full disk: the records it wrote whole are kept, and once there is room again the next records are whole lines', async () => {
    const file = join(disk, 'access.log');
    const filler = join(disk, 'filler');
    const router = await startRouter(resourcesFor([{ name: 'pod-a', port }]), {
      workers: 1,
      env: { ACCESS_LOG_ENABLED: 'true', ACCESS_LOG_FORMAT: 'json', ACCESS_LOG_OUTPUT: file },
    });
    try {
      // One page (4 KiB) left: the first batch larger than that is written in part, then fails.
      const st = statfsSync(disk);
      writeFileSync(filler, Buffer.alloc((st.bavail - 1) * st.bsize, 0x78));
      let sent = 0;
      for (let round = 0; round < 20 && (await droppedRecords(router.url)) === 0; round++) {
        // Ten at once: they end in the same turns and are written as one batch of about 5 KB.
        await Promise.all(Array.from({ length: 10 }, async () => {
          const id = `full-${sent++}`;
          await (await postJson(`${router.url}/v1/completions`, { model: 'nope', prompt: 'x' }, { 'x-request-id': id })).text();
        }));
        await new Promise((r) => setTimeout(r, 150)); // past the flush interval: the batch was written
      }
      const dropped = await droppedRecords(router.url);
      expect(dropped).toBeGreaterThan(0);
      rmSync(filler); // the operator frees space
      for (let i = 0; i < 3; i++) {
        await (await postJson(`${router.url}/v1/completions`, { model: 'nope', prompt: 'x' }, { 'x-request-id': `after-${i}` })).text();
      }
      await waitFor('the records after the disk had room again', () => readFileSync(file, 'utf8').includes('"after-2"'), 5000);
      const lines = readFileSync(file, 'utf8').split('\n');
      expect(lines.pop()).toBe(''); // the file ends with a whole line
      const ids: string[] = [];
      const broken: string[] = [];
      for (const l of lines) {
        try {
          ids.push(JSON.parse(l).request_id);
        } catch {
          broken.push(l);
        }
      }
      // The cut record is one line of its own, the start of a record; every other line is one.
      expect(broken.length).toBeLessThanOrEqual(1);
      for (const b of broken) expect(b).toMatch(/^\{"timestamp":"/);
      expect(ids.slice(-3)).toEqual(['after-0', 'after-1', 'after-2']);
      // Every record is either in the file, whole, or counted as dropped: none is both.
      expect(ids.length - 3 + (await droppedRecords(router.url))).toBe(sent);
    } finally {
      await router.kill();
      rmSync(file, { force: true });
      rmSync(filler, { force: true });
    }
  });
});
