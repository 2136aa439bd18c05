/**
 * process-failure.ts in a real Node process each (a failure handler is process-wide): the line it
 * logs, the bounded cleanup, a second failure during the cleanup, and the exit code.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/processes.js';
import { describeError } from '../../src/process-failure.js';

const FAILURE = join(ROOT, 'dist/process-failure.js');
const OPS = join(ROOT, 'dist/observe/ops-log.js');

/** Runs `body` in a module with exitOnFailure installed (cleanup: `cleanup`, 300 ms at most); its exit code and JSON ops lines. */
function run(cleanup: string, body: string): { code: number | null; lines: Record<string, unknown>[]; stdout: string } {
  const script = `
    import { exitOnFailure } from ${JSON.stringify(FAILURE)};
    import { OpsLog } from ${JSON.stringify(OPS)};
    const ops = new OpsLog('json', 'worker');
    exitOnFailure({ ops, cleanupMs: 300, cleanup: ${cleanup} });
    ${body}
  `;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 10_000 });
  const lines = r.stderr.split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l));
  return { code: r.status, lines, stdout: r.stdout };
}

describe('exitOnFailure', () => {
  it('an exception nothing caught: one error line with its stack, the cleanup run, exit 1', () => {
    const r = run(`async () => { process.stdout.write('cleaned'); }`, `setImmediate(() => { throw new Error('boom'); });`);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('cleaned');
    expect(r.lines).toHaveLength(1);
    expect(r.lines[0]).toMatchObject({ level: 'error', event: 'crash', origin: 'uncaughtException' });
    expect(r.lines[0].message).toMatch(/^an exception nothing caught: Error: boom\n\s+at /);
  });

  it('a rejection nothing handled: the same, its origin said', () => {
    const r = run(`async () => {}`, `Promise.reject(new Error('no handler'));`);
    expect(r.code).toBe(1);
    expect(r.lines[0]).toMatchObject({ level: 'error', event: 'crash', origin: 'unhandledRejection' });
    expect(r.lines[0].message).toContain('a promise rejected with nothing to handle it: Error: no handler');
  });

  it('a cleanup that does not end: exit 1 once its time is over, said as a warning', () => {
    const r = run(`() => new Promise(() => { setInterval(() => {}, 1000); })`, `setImmediate(() => { throw new Error('boom'); });`);
    expect(r.code).toBe(1);
    expect(r.lines.map((l) => [l.level, l.event])).toEqual([['error', 'crash'], ['warn', 'crash']]);
    expect(r.lines[1].message).toContain('not all saved within 300 ms');
  });

  it('a cleanup that fails: its error logged, exit 1', () => {
    const r = run(`async () => { throw new Error('disk gone'); }`, `setImmediate(() => { throw new Error('boom'); });`);
    expect(r.code).toBe(1);
    expect(r.lines[1]).toMatchObject({ level: 'error', event: 'crash' });
    expect(r.lines[1].message).toContain('saving what the process held failed: Error: disk gone');
  });

  it('a second failure during the cleanup: logged too, exit 1 at once', () => {
    const r = run(`() => new Promise(() => { setImmediate(() => { throw new Error('second'); }); setInterval(() => {}, 1000); })`, `setImmediate(() => { throw new Error('first'); });`);
    expect(r.code).toBe(1);
    expect(r.lines).toHaveLength(2);
    expect(r.lines[1].message).toMatch(/^failed again while saving what it held: an exception nothing caught: Error: second/);
  });
});

describe('describeError', () => {
  it('an Error by its stack, anything else by its value', () => {
    expect(describeError(new TypeError('t'))).toMatch(/^TypeError: t\n\s+at /);
    expect(describeError('text')).toBe('a non-Error value was thrown: text');
    expect(describeError({ a: 1 })).toBe('a non-Error value was thrown: {"a":1}');
    expect(describeError(10n)).toBe('a non-Error value was thrown: 10');
  });
});
