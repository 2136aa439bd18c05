import { describe, expect, it } from 'vitest';
import { OpsLog } from '../../../src/observe/ops-log.js';

const at = (): Date => new Date('2026-01-02T03:04:05.006Z');

function collect(format: 'json' | 'text'): { log: OpsLog; lines: string[] } {
  const lines: string[] = [];
  return { log: new OpsLog(format, 'primary', (l) => lines.push(l), at), lines };
}

describe('OpsLog', () => {
  it('json: one object per line with time, level, process, pid, event, message and the fields', () => {
    const { log, lines } = collect('json');
    log.info('resources', 'loaded 2 routes', { routes: ['default/a', 'ml/b'], snapshot: 1 });
    log.warn('reload', 'rejected: bad\nfield', { applied: false, message: 'not overwritten' });
    expect(lines).toHaveLength(2);
    for (const l of lines) expect(l.endsWith('\n') && l.indexOf('\n') === l.length - 1).toBe(true);
    expect(JSON.parse(lines[0])).toEqual({
      time: '2026-01-02T03:04:05.006Z', level: 'info', process: 'primary', pid: process.pid,
      event: 'resources', message: 'loaded 2 routes', routes: ['default/a', 'ml/b'], snapshot: 1,
    });
    expect(JSON.parse(lines[1])).toMatchObject({ level: 'warn', event: 'reload', message: 'rejected: bad\nfield', applied: false });
  });

  it('text: time, level, process and pid, event, message; a multi-line message stays one line', () => {
    const { log, lines } = collect('text');
    log.error('exit', 'first\nsecond', { code: 2 });
    expect(lines).toEqual([`2026-01-02T03:04:05.006Z error [primary ${process.pid}] exit: first\\nsecond\n`]);
  });
});
