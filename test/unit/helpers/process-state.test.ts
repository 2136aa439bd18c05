/**
 * The check run after each test file (test/helpers/process-state.ts, vitest's setupFiles): what a
 * file left changed in the worker process that the next files share.
 */
import { describe, expect, it } from 'vitest';
import { processStateChanges } from '../../helpers/process-state.js';

const listeners = (over: Record<string, number> = {}): Record<string, number> => ({
  SIGTERM: 1, SIGINT: 1, SIGHUP: 0, SIGUSR2: 0, uncaughtException: 1, unhandledRejection: 1, warning: 1, message: 0, ...over,
});
const state = (env: Record<string, string | undefined>, cwd = '/repo', l = listeners()) => ({ env, cwd, listeners: l });

describe('processStateChanges', () => {
  it('is empty when the file left the process as it found it', () => {
    expect(processStateChanges(state({ A: '1' }), state({ A: '1' }), false)).toEqual([]);
  });

  it('names each variable set, changed or removed', () => {
    expect(processStateChanges(state({ A: '1', B: '2' }), state({ A: '3', C: '4' }), false)).toEqual([
      'process.env.A: "1" → "3"',
      'process.env.B: "2" → undefined',
      'process.env.C: undefined → "4"',
    ]);
  });

  it('names a moved working directory, listeners left behind and fake timers left on', () => {
    const after = state({}, '/tmp', listeners({ SIGTERM: 2, unhandledRejection: 3 }));
    expect(processStateChanges(state({}), after, true)).toEqual([
      'working directory: /repo → /tmp',
      "process listeners for 'SIGTERM': 1 → 2",
      "process listeners for 'unhandledRejection': 1 → 3",
      'fake timers still on (call vi.useRealTimers())',
    ]);
  });

  it('does not count listeners a file removed', () => {
    expect(processStateChanges(state({}), state({}, '/repo', listeners({ SIGINT: 0 })), false)).toEqual([]);
  });
});
