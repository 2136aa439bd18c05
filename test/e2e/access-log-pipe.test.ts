/**
 * The access log to stdout when stdout is an OS pipe, as a container runtime gives it (not Node's
 * socket pair): each worker writes on the event loop through a non-blocking description of the
 * pipe of its own. Records whole across two workers, none lost at SIGTERM, and none lost while the
 * reader pauses (the writes wait and try again; the router keeps answering).
 */
import { Pool } from 'undici';
import { readFileSync, readdirSync, readlinkSync, statSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { resourcesFor, startMock, startRouter, waitFor, type Router } from '../helpers/processes.js';

const O_NONBLOCK = 0o4000;

/** Sends `total` completions, `connections` at a time, each with its own request id. */
async function send(router: Router, total: number, connections: number, prefix: string): Promise<void> {
  const pool = new Pool(router.url, { connections });
  let next = 0;
  try {
    await Promise.all(Array.from({ length: connections }, async () => {
      while (next < total) {
        const i = next++;
        const r = await pool.request({
          path: '/v1/completions', method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': `${prefix}-${i}` },
          body: `{"model":"sf-model","prompt":"${'y'.repeat(i % 200)}"}`,
        });
        expect(r.statusCode).toBe(200);
        await r.body.text();
      }
    }));
  } finally {
    await pool.close();
  }
}

function ids(text: string): string[] {
  return text.split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l).request_id as string);
}

/** The pids of `pid`'s children (the workers). */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(d));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** The open-file flags of each of `pid`'s descriptors that name the same pipe as its stdout. */
function pipeDescriptors(pid: number): { fd: number; nonBlocking: boolean }[] {
  const stdout = readlinkSync(`/proc/${pid}/fd/1`);
  return readdirSync(`/proc/${pid}/fd`).map(Number).filter((fd) => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${fd}`) === stdout;
    } catch {
      return false;
    }
  }).map((fd) => {
    const flags = Number.parseInt(/^flags:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8'))![1], 8);
    return { fd, nonBlocking: (flags & O_NONBLOCK) !== 0 };
  });
}

describe('access log to stdout, an OS pipe (as in a container)', () => {
  const env = { ACCESS_LOG_ENABLED: 'true', ACCESS_LOG_FORMAT: 'json', ACCESS_LOG_OUTPUT: 'stdout' };

  it('2 workers: each writes through a non-blocking description of the pipe of its own; 6,000 records, every line whole, none lost at SIGTERM', async () => {
    const mock = await startMock('pod-a');
    const router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), { workers: 2, env, stdoutPipe: true });
    try {
      expect(statSync(`/proc/${router.pid}/fd/1`).isFIFO()).toBe(true);
      const workers = childrenOf(router.pid);
      expect(workers).toHaveLength(2);
      for (const w of workers) {
        const own = pipeDescriptors(w).filter((p) => p.fd !== 1);
        expect(own).toEqual([{ fd: expect.any(Number), nonBlocking: true }]);
      }
      const total = 6000;
      await send(router, total, 32, 'p');
      expect(await router.kill()).toBe(0);
      const out = router.child.stdout!;
      if (!out.readableEnded) await new Promise((resolve) => out.once('end', resolve)); // every writer gone
      const written = ids(router.stdout());
      expect(written).toHaveLength(total);
      expect(new Set(written).size).toBe(total);
    } finally {
      await router.stop();
      await mock.kill();
    }
  }, 60_000);

  it('a reader that stops: the router keeps answering, the records wait (none dropped) and arrive in order once it reads again', async () => {
    const mock = await startMock('pod-a');
    const router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), { workers: 1, env, stdoutPipe: true });
    try {
      await send(router, 10, 1, 'w'); // warm-up, read
      await waitFor('the warm-up records', () => ids(router.stdout()).length === 10);
      router.child.stdout!.pause();
      // Far more than a pipe holds (64 KiB, about 250 of these records): the writes past it wait on the thread pool.
      const total = 3000;
      await send(router, total, 1, 'r'); // answered while nothing reads the log: a blocked event loop would hang here
      expect(ids(router.stdout())).toHaveLength(10);
      router.child.stdout!.resume();
      await waitFor('every record', () => ids(router.stdout()).length === 10 + total, 20_000);
      expect(ids(router.stdout()).slice(10)).toEqual(Array.from({ length: total }, (_, i) => `r-${i}`));
      expect(router.stderr()).not.toMatch(/dropped/);
    } finally {
      await router.stop();
      await mock.kill();
    }
  }, 60_000);
});
