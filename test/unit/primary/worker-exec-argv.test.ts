import { describe, expect, it } from 'vitest';
import { workerExecArgv } from '../../../src/primary/worker-exec-argv.js';

describe("a worker's Node flags", () => {
  it("are the primary's, with the young generation's semi-spaces fixed at the setting", () => {
    expect(workerExecArgv(['--enable-source-maps'], undefined, 16)).toEqual(['--enable-source-maps', '--min-semi-space-size=16', '--max-semi-space-size=16']);
    expect(workerExecArgv([], '', 32)).toEqual(['--min-semi-space-size=32', '--max-semi-space-size=32']);
  });

  it('leave the sizing to V8 at 0', () => {
    expect(workerExecArgv(['--enable-source-maps'], undefined, 0)).toEqual(['--enable-source-maps']);
  });

  it("add nothing when the operator sized it, on the command line or in NODE_OPTIONS, in either spelling", () => {
    expect(workerExecArgv(['--max-semi-space-size=64'], undefined, 16)).toEqual(['--max-semi-space-size=64']);
    expect(workerExecArgv(['--min_semi_space_size', '4'], undefined, 16)).toEqual(['--min_semi_space_size', '4']);
    expect(workerExecArgv([], '--max-old-space-size=512 --max-semi-space-size=8', 16)).toEqual([]);
    // Other heap flags are no reason to leave it.
    expect(workerExecArgv(['--max-old-space-size=512'], '--max-old-space-size=512', 16)).toEqual(['--max-old-space-size=512', '--min-semi-space-size=16', '--max-semi-space-size=16']);
  });

  it('do not change the array they were given', () => {
    const given = ['--enable-source-maps'];
    workerExecArgv(given, undefined, 16);
    expect(given).toEqual(['--enable-source-maps']);
  });
});
