import { performance } from 'node:perf_hooks';
import type { AccessRecord } from 'inference-router/observe/access-record';

/** What a loop of records cost: the event loop's active ms and the process's CPU ms (every thread). */
export interface Cost { active: number; cpu: number }

/**
 * Calls `each` on `n` records of `records` in turn, `perTurn` per event-loop turn (as requests end
 * together), then awaits `done`; returns the loop's active ms and the process's CPU ms (the main
 * thread plus the libuv thread pool's write(2) calls). Run with a no-op `each` for the baseline.
 */
export async function perTurnCost(records: readonly AccessRecord[], n: number, perTurn: number,
  each: (r: AccessRecord) => void, done: () => Promise<void>): Promise<Cost> {
  const start = performance.eventLoopUtilization();
  const cpu0 = process.cpuUsage();
  let i = 0;
  await new Promise<void>((resolve) => {
    const turn = (): void => {
      for (let k = 0; k < perTurn && i < n; k++, i++) each(records[i % records.length] as AccessRecord);
      if (i < n) setImmediate(turn);
      else setImmediate(resolve);
    };
    turn();
  });
  await done();
  const active = performance.eventLoopUtilization(start).active;
  const cpu = process.cpuUsage(cpu0);
  return { active, cpu: (cpu.user + cpu.system) / 1000 };
}
