import { describe, expect, it } from 'vitest';
import { atTurnEnd } from '../../src/turn-end.js';

const nextTurn = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('atTurnEnd', () => {
  it('runs the turn\'s tasks after the turn, in the order they were queued, in one Immediate', async () => {
    const seen: string[] = [];
    atTurnEnd(() => seen.push('a'));
    setImmediate(() => seen.push('an Immediate queued after the first task'));
    atTurnEnd(() => seen.push('b'));
    expect(seen).toEqual([]);
    await nextTurn();
    expect(seen).toEqual(['a', 'b', 'an Immediate queued after the first task']);
  });

  it('runs a task queued while the tasks run in the next turn, not in the same one', async () => {
    let runs = 0;
    const task = (): void => {
      runs++;
      if (runs < 3) atTurnEnd(task);
    };
    atTurnEnd(task);
    const perTurn: number[] = [];
    for (let i = 0; i < 4; i++) {
      await nextTurn();
      perTurn.push(runs);
    }
    expect(perTurn).toEqual([1, 2, 3, 3]);
  });

  it('runs every task when one throws, then throws the first error', async () => {
    const seen: number[] = [];
    const errors: unknown[] = [];
    const onError = (err: unknown): void => { errors.push(err); };
    const listeners = process.listeners('uncaughtException');
    process.removeAllListeners('uncaughtException');
    process.on('uncaughtException', onError);
    try {
      atTurnEnd(() => { seen.push(1); throw new Error('first'); });
      atTurnEnd(() => { seen.push(2); throw new Error('second'); });
      atTurnEnd(() => seen.push(3));
      await nextTurn();
      await nextTurn();
    } finally {
      process.removeListener('uncaughtException', onError);
      for (const l of listeners) process.on('uncaughtException', l);
    }
    expect(seen).toEqual([1, 2, 3]);
    expect(errors.map((e) => (e as Error).message)).toEqual(['first']);
    // The queue is usable after the error.
    const after: string[] = [];
    atTurnEnd(() => after.push('ok'));
    await nextTurn();
    expect(after).toEqual(['ok']);
  });
});
