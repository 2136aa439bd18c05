import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { OpsLog } from '../../../src/observe/ops-log.js';
import { stopWhileStarting } from '../../../src/primary/stop-while-starting.js';

/** A process stand-in: signals are its events, exit is recorded. */
class FakeProcess extends EventEmitter {
  exits: number[] = [];
  exit(code: number): void {
    this.exits.push(code);
  }
}

function setUp(): { proc: FakeProcess; lines: string[]; done: () => void } {
  const proc = new FakeProcess();
  const lines: string[] = [];
  const ops = new OpsLog('json', 'primary', (l) => lines.push(l), () => new Date(0));
  return { proc, lines, done: stopWhileStarting(ops, proc) };
}

describe('stopWhileStarting: a stop signal before the drain\'s handlers are in place', () => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`${signal}: exit 0, said as an exit line`, () => {
      const { proc, lines } = setUp();
      proc.emit(signal, signal);
      expect(proc.exits).toEqual([0]);
      expect(lines.map((l) => JSON.parse(l) as unknown)).toEqual([expect.objectContaining({
        level: 'info', event: 'exit', code: 0, signal, message: `${signal} received while starting, before any worker served: exit 0`,
      })]);
    });
  }

  it('once the start is done its handlers are gone: the signals are the drain\'s', () => {
    const { proc, lines, done } = setUp();
    expect(proc.listenerCount('SIGTERM') + proc.listenerCount('SIGINT')).toBe(2);
    done();
    expect(proc.listenerCount('SIGTERM') + proc.listenerCount('SIGINT')).toBe(0);
    proc.emit('SIGTERM', 'SIGTERM');
    expect(proc.exits).toEqual([]);
    expect(lines).toEqual([]);
  });
});
