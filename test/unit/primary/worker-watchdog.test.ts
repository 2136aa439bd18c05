import { describe, expect, it } from 'vitest';
import { WorkerWatchdog } from '../../../src/primary/worker-watchdog.js';

function setUp(limitMs = 5000) {
  let now = 0;
  const stuck: [string, number][] = [];
  const dog = new WorkerWatchdog<string>({ limitMs, everyMs: 1000, now: () => now, stuck: (w, ms) => stuck.push([w, ms]) });
  /** Time passes in checks a second apart; `hear` says who speaks at each. */
  const run = (seconds: number, hear: string[] = []): void => {
    for (let i = 0; i < seconds; i++) {
      now += 1000;
      for (const w of hear) dog.heard(w);
      dog.check();
    }
  };
  return { dog, stuck, run, setNow: (ms: number) => { now = ms; }, now: () => now };
}

describe('WorkerWatchdog', () => {
  it('a watched worker silent for the limit is told once; one that speaks is not', () => {
    const { dog, stuck, run } = setUp();
    dog.watch('a');
    dog.watch('b');
    run(4, ['a']);
    expect(stuck).toEqual([]);
    run(1, ['a']);
    expect(stuck).toEqual([['b', 5000]]);
    run(10, ['a']);
    expect(stuck).toEqual([['b', 5000]]);
  });

  it('workers not watched (starting) or forgotten (draining, exited) are never told', () => {
    const { dog, stuck, run } = setUp();
    dog.heard('starting');
    dog.watch('a');
    dog.watch('b');
    dog.forget('a');
    run(3);
    dog.forgetAll();
    run(20);
    expect(stuck).toEqual([]);
  });

  it('after the primary\'s own loop was held up, silence is counted from then', () => {
    const { dog, stuck, run, setNow, now } = setUp();
    dog.watch('a');
    run(2, ['a']);
    // The primary blocked 20 s: a's messages of that time are still unread.
    setNow(now() + 20_000);
    dog.check();
    expect(stuck).toEqual([]);
    run(4);
    expect(stuck).toEqual([]);
    run(1);
    expect(stuck).toEqual([['a', 5000]]);
  });
});
