/**
 * process-warnings.ts: Node's warnings as operational-log lines, in a real Node process each (the
 * printer is process-wide), with Node's own flags given as a user would (on the command line and
 * in NODE_OPTIONS); and the reading of those flags.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, tempDir } from '../helpers/processes.js';
import { nodeOptionArgs, warningFlags } from '../../src/process-warnings.js';

const WARNINGS = join(ROOT, 'dist/process-warnings.js');
const OPS = join(ROOT, 'dist/observe/ops-log.js');

/** Emits a deprecation, an experimental warning and a plain one with a detail, in a process with the printer installed. */
function run(nodeArgs: string[] = [], nodeOptions = ''): { stderr: string; lines: Record<string, unknown>[]; installed: string } {
  const script = `
    import { warningsToOpsLog } from ${JSON.stringify(WARNINGS)};
    import { OpsLog } from ${JSON.stringify(OPS)};
    process.stdout.write(String(warningsToOpsLog(new OpsLog('json', 'worker'))));
    process.emitWarning('old API', { type: 'DeprecationWarning', code: 'DEP0999' });
    process.emitWarning('new thing', 'ExperimentalWarning');
    process.emitWarning('too many', { code: 'TEST_CODE', detail: 'the detail' });
  `;
  const r = spawnSync(process.execPath, [...nodeArgs, '--input-type=module', '-e', script], {
    encoding: 'utf8', timeout: 10_000, env: { ...process.env, NODE_OPTIONS: nodeOptions },
  });
  const lines = r.stderr.split('\n').filter((l) => l.length > 0).map((l) => {
    try {
      return JSON.parse(l) as Record<string, unknown>;
    } catch {
      return { notJson: l };
    }
  });
  return { stderr: r.stderr, lines, installed: r.stdout };
}

describe('warningsToOpsLog in a real process', () => {
  it('each warning is one warn line of the log (event warning, type, code), Node prints nothing of its own', () => {
    const r = run();
    expect(r.installed).toBe('true');
    expect(r.lines).toEqual([
      expect.objectContaining({ level: 'warn', process: 'worker', event: 'warning', message: '[DEP0999] DeprecationWarning: old API', type: 'DeprecationWarning', code: 'DEP0999' }),
      expect.objectContaining({ level: 'warn', event: 'warning', message: 'ExperimentalWarning: new thing', type: 'ExperimentalWarning', code: null }),
      expect.objectContaining({ level: 'warn', event: 'warning', message: '[TEST_CODE] Warning: too many\nthe detail', type: 'Warning', code: 'TEST_CODE' }),
    ]);
  });

  it('--no-warnings: none written, nothing installed', () => {
    const r = run(['--no-warnings']);
    expect(r.installed).toBe('false');
    expect(r.stderr).toBe('');
  });

  it('--disable-warning by type on the command line and by code in NODE_OPTIONS: those left out', () => {
    const r = run(['--disable-warning=ExperimentalWarning'], '--disable-warning DEP0999');
    expect(r.lines.map((l) => l.type)).toEqual(['Warning']);
  });

  it('--no-deprecation: deprecations left out', () => {
    const r = run(['--no-deprecation']);
    expect(r.lines.map((l) => l.type)).toEqual(['ExperimentalWarning', 'Warning']);
  });

  it('--trace-warnings (in NODE_OPTIONS): the stack in the message', () => {
    const r = run([], '--trace-warnings');
    expect(r.lines).toHaveLength(3);
    expect(String(r.lines[1].message)).toMatch(/^ExperimentalWarning: new thing\n\s+at /);
  });

  it('--redirect-warnings=<file>: Node keeps writing them there, nothing on stderr', () => {
    const file = join(tempDir(), 'warnings.txt');
    const r = run([`--redirect-warnings=${file}`]);
    expect(r.installed).toBe('false');
    expect(r.stderr).toBe('');
    for (let i = 0; i < 50 && !existsSync(file); i++) spawnSync('sleep', ['0.02']);
    expect(readFileSync(file, 'utf8')).toContain('DeprecationWarning: old API');
  });
});

describe('warningFlags', () => {
  it('reads both forms of each flag, `_` for `-`, from the command line and NODE_OPTIONS', () => {
    const f = warningFlags(['--disable-warning', 'DEP0005', '--disable_warning=ExperimentalWarning', '--max-old-space-size=512'], '--inspect "--disable-warning=TEST CODE"');
    expect([...f.disabled].sort()).toEqual(['DEP0005', 'ExperimentalWarning', 'TEST CODE']);
    expect(f.redirected).toBe(false);
    expect(warningFlags([], '--redirect-warnings /var/log/w.txt').redirected).toBe(true);
    expect(warningFlags(['--redirect_warnings=w.txt'], undefined).redirected).toBe(true);
    expect(warningFlags(['--disable-warning'], undefined).disabled.size).toBe(0);
  });

  it('NODE_OPTIONS is split on white space, a double-quoted part whole with its escapes', () => {
    expect(nodeOptionArgs('  --a   --b=1\t"--c=x y" "q\\"uote"  ')).toEqual(['--a', '--b=1', '--c=x y', 'q"uote']);
    expect(nodeOptionArgs('')).toEqual([]);
    expect(nodeOptionArgs('""')).toEqual(['']);
  });
});
