/**
 * The local mode's two timeouts when the event loop that runs them is held past them (a long
 * task, a collection, the CPU taken by other processes) while the other end, a real process,
 * answers in time meanwhile (fixtures/limit-end.mjs). The answer is read before the timeout acts:
 * - a worker's decision asked of the primary (LocalLimitClient, 1 s by default) is the primary's
 *   answer, not a request failed as "limiter unavailable";
 * - leases the primary recalled (LeaseBook, 250 ms by default) and got back are not forfeited,
 *   which would refuse the admission that waited for them.
 * What happens with no answer at all is tested in local-limit-ipc and lease-book tests.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { EventEmitter, once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RateLimitSpec } from '../../../src/config/resource-types.js';
import { CounterStore } from '../../../src/ratelimit/local/counter-store.js';
import { limitMessageType, MSG_REQUEST, OP_ADMIT } from '../../../src/ratelimit/local/ipc-protocol.js';
import { NO_LIMIT, STATUS_ALLOWED } from '../../../src/ratelimit/decision-codec.js';
import { LocalLimitClient } from '../../../src/ratelimit/local/limit-client.js';
import { attachLocalLimitHost, type LimitHostCluster, type LimitHostWorker } from '../../../src/ratelimit/local/limit-host.js';
import { busyAfterThisTurn } from '../../helpers/busy-loop.js';
import { compileRatelimit, type CompiledRatelimit } from './compile-ratelimit.js';

const LIMIT_END = fileURLToPath(new URL('./fixtures/limit-end.mjs', import.meta.url));
const LIMIT: RateLimitSpec = { inputTokensPerUnit: 100, outputTokensPerUnit: null, unit: 'minute', global: null, mode: 'enforce' };
/** How long the loop is held past each timeout below (50 ms): the other end has all of it to answer, however loaded the machine. */
const HELD_MS = 1000;

let compiled: CompiledRatelimit;
const children: ChildProcess[] = [];

beforeAll(async () => {
  compiled = await compileRatelimit();
});

afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill();
  await compiled?.remove();
});

/** The fixture in the given role, once it listens. */
async function start(role: 'primary' | 'worker'): Promise<ChildProcess> {
  const child = fork(LIMIT_END, [], {
    env: { ...process.env, RL_DIST: compiled.dir, RL_ROLE: role },
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  children.push(child);
  await once(child.stdout!, 'data');
  return child;
}

describe("a worker's decision asked of the primary, this worker's loop held past the timeout", () => {
  it('the answer that came in time decides the request', async () => {
    const primary = await start('primary');
    // The first exchange, with time to spare: the primary's modules are loaded and it answers.
    const warm = new LocalLimitClient({ port: primary, timeoutMs: 10_000 });
    expect((await warm.admit('ns/warm', LIMIT, 1)).allowed).toBe(true);
    await warm.close();

    const client = new LocalLimitClient({ port: primary, timeoutMs: 50 });
    // A key of its own: no lease held for it, so the decision is the primary's. The request goes
    // out at this turn's end, before the loop is held.
    const decided = Promise.resolve(client.admit('ns/held', LIMIT, 1))
      .then((d) => `allowed: ${d.allowed}`, (err: Error) => `failed: ${err.message}`);
    await busyAfterThisTurn(HELD_MS);
    expect(await decided).toBe('allowed: true');
    await client.close();
  });
});

describe("a recall of leases, the primary's loop held past the recall timeout", () => {
  it('the leases given back in time are taken back, and the admission that waited for them is decided with them', async () => {
    const child = await start('worker');
    const fromChild: LimitHostWorker = {
      send: (message, sendHandle, callback) => child.send(message, sendHandle, callback),
      isConnected: () => child.connected,
    };
    // A second worker in this process, whose answers are kept here.
    const replies: { a: number[] }[] = [];
    const other: LimitHostWorker = {
      send: (message, _sendHandle, callback) => {
        replies.push(message as unknown as { a: number[] });
        callback(null);
        return true;
      },
      isConnected: () => true,
    };
    const cluster = new EventEmitter();
    const decided: unknown[] = [];
    child.on('message', (message: { cmd?: string }) => {
      if (limitMessageType(message) !== null) cluster.emit('message', fromChild, message);
      else if (message.cmd === 'decided') decided.push(message);
    });
    const detach = attachLocalLimitHost(cluster as unknown as LimitHostCluster, new CounterStore(), { recallTimeoutMs: 50 });
    try {
      // The child's admission of 1 token of 100 gets a lease: 1/16 of the 99 left, 6 tokens.
      child.send({ cmd: 'admit', key: 'ns/recalled', tokens: 1, limit: LIMIT });
      await vi.waitFor(() => expect(decided).toEqual([{ cmd: 'decided', allowed: true, leasesHeld: 1 }]), { timeout: 10_000 });

      // 95 more fit only with the lease back (1 + 6 + 95 > 100): the primary recalls it and the
      // admission waits. The recall goes out at this turn's end; the child gives the lease back
      // at once, while this loop is held.
      cluster.emit('message', other, { t: MSG_REQUEST, a: [OP_ADMIT, 1, 'ns/recalled', 100, NO_LIMIT, 'minute', 95] });
      await busyAfterThisTurn(HELD_MS);
      await vi.waitFor(() => expect(replies).toHaveLength(1), { timeout: 5_000 });
      expect(replies[0].a[0]).toBe(1);
      expect(replies[0].a[1], 'admitted (1 is refused by input: the lease was forfeited)').toBe(STATUS_ALLOWED);
    } finally {
      detach();
    }
  });
});
