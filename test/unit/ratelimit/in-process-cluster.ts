/**
 * A node:cluster stand-in for lease tests: N LocalLimitClients joined to one limit host in this
 * process by channels that behave like cluster IPC (JSON copies, delivered in order on a later
 * turn). Counts the messages each way, so tests can see which decisions needed the primary.
 */
import { EventEmitter } from 'node:events';
import { CounterStore } from '../../../src/ratelimit/local/counter-store.js';
import type { Clock } from '../../../src/clock.js';
import { LocalLimitClient } from '../../../src/ratelimit/local/limit-client.js';
import { attachLocalLimitHost, type LimitHostCluster, type LimitHostWorker, type LocalLimitHostOptions } from '../../../src/ratelimit/local/limit-host.js';

export interface InProcessCluster {
  store: CounterStore;
  clients: LocalLimitClient[];
  /** Messages sent worker -> primary, per worker. */
  sentToPrimary: number[];
  /** Drops worker i's channel and tells the host it exited (a crashed worker). */
  kill(i: number): void;
  /** Stops delivering messages to worker i (a hung worker); they are dropped. */
  freeze(i: number): void;
  close(): Promise<void>;
}

export function inProcessCluster(workers: number, clock: Clock, hostOptions: LocalLimitHostOptions = {}): InProcessCluster {
  const store = new CounterStore(clock);
  const cluster = new EventEmitter();
  const detach = attachLocalLimitHost(cluster as unknown as LimitHostCluster, store, hostOptions);
  const sentToPrimary: number[] = [];
  const clients: LocalLimitClient[] = [];
  const hostSides: LimitHostWorker[] = [];
  const frozen = new Set<number>();
  const dead = new Set<number>();
  for (let i = 0; i < workers; i++) {
    sentToPrimary.push(0);
    const port = new EventEmitter() as EventEmitter & { send: unknown; connected: boolean };
    port.connected = true;
    const hostSide: LimitHostWorker = {
      send: (message, _handle, callback) => {
        const copy = JSON.parse(JSON.stringify(message)) as unknown;
        setImmediate(() => {
          if (!frozen.has(i) && !dead.has(i)) port.emit('message', copy);
          callback(null);
        });
        return true;
      },
      isConnected: () => !dead.has(i),
    };
    port.send = (message: unknown, _handle: undefined, callback: (e: Error | null) => void): boolean => {
      sentToPrimary[i]++;
      const copy = JSON.parse(JSON.stringify(message)) as unknown;
      setImmediate(() => {
        if (!dead.has(i)) cluster.emit('message', hostSide, copy);
        callback(null);
      });
      return true;
    };
    hostSides.push(hostSide);
    clients.push(new LocalLimitClient({ port: port as never, timeoutMs: 5_000, clock }));
  }
  return {
    store,
    clients,
    sentToPrimary,
    kill(i) {
      dead.add(i);
      cluster.emit('exit', hostSides[i]);
    },
    freeze(i) {
      frozen.add(i);
    },
    async close() {
      for (const c of clients) await c.close();
      await new Promise((r) => setImmediate(r));
      detach();
    },
  };
}
