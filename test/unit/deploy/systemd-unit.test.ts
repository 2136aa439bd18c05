/**
 * deploy/systemd/inference-router.service: systemd's own check of it (`systemd-analyze verify`,
 * from Debian's systemd package; skipped with the reason where it cannot be had), its command
 * line and environment as the router reads them, and its stop timeout against the router's drain.
 * test/e2e/systemd-unit.test.ts starts the built router with them.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { JOURNAL_IDENTIFIER } from '../../../src/observe/access-log-journal.js';
import { parseSettings } from '../../../src/config/settings.js';
import { USAGE } from '../../../src/config/usage.js';
import { WORKER_KILL_GRACE_MS } from '../../../src/primary/drain-again.js';
import { readUnit, timeSpanMs, UNIT_CHECKOUT, UNIT_FILE } from '../../helpers/systemd-unit.js';

const ROOT = new URL('../../../', import.meta.url).pathname.replace(/\/$/, '');
const analyze = spawnSync('systemd-analyze', ['--version'], { encoding: 'utf8' });
const noAnalyze = analyze.status === 0 ? null : 'no systemd-analyze (Debian\'s systemd package has it)';
if (noAnalyze !== null) console.warn(`systemd-unit: verify skipped: ${noAnalyze}`);

describe('the systemd unit', () => {
  const unit = readUnit();

  it.skipIf(noAnalyze !== null)('systemd-analyze verify takes it without a warning (the checkout and Node where it runs here)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'unit-'));
    try {
      const file = join(dir, 'inference-router.service');
      writeFileSync(file, readFileSync(UNIT_FILE, 'utf8').replaceAll(UNIT_CHECKOUT, ROOT).replaceAll('/usr/bin/node', process.execPath));
      const r = spawnSync('systemd-analyze', ['verify', file], { encoding: 'utf8', timeout: 30_000 });
      expect([r.status, r.stderr.trim()]).toEqual([0, '']);
      // The check is systemd's: a misspelt key or value is named.
      writeFileSync(file, readFileSync(file, 'utf8').replace('KillMode=mixed', 'KillMode=mixd'));
      const bad = spawnSync('systemd-analyze', ['verify', file], { encoding: 'utf8', timeout: 30_000 });
      expect(bad.stderr).toMatch(/kill mode.*mixd/i);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs the built CLI of the checkout with flags and settings the router takes', () => {
    expect(unit.execStart.slice(0, 2)).toEqual(['/usr/bin/node', `${UNIT_CHECKOUT}/dist/cli.js`]);
    // Every variable is one the router's --help lists.
    const known = new Set(USAGE.split('\n').flatMap((line) => /^\s+([A-Z][A-Z0-9_]+)\s/.exec(line)?.slice(1) ?? []));
    expect(known.size).toBeGreaterThan(50);
    for (const name of Object.keys(unit.env)) expect(known, name).toContain(name);
    const settings = parseSettings(unit.execStart.slice(2), unit.env);
    expect(settings).not.toBeNull();
    expect(settings).toMatchObject({ port: 8080, host: '0.0.0.0', resources: '/etc/inference-router/resources.yaml' });
  });

  it('stops by SIGTERM to the primary alone, and waits longer than the drain can take', () => {
    // The primary drains and stops the workers; SIGTERM to every process at once would not wait for it.
    expect([unit.service('KillMode'), unit.service('KillSignal')]).toEqual(['mixed', 'SIGTERM']);
    const defaults = parseSettings(unit.execStart.slice(2), unit.env)!;
    const drainMs = defaults.drainDelayMs + defaults.drainTimeoutMs + WORKER_KILL_GRACE_MS;
    expect(timeSpanMs(unit.service('TimeoutStopSec')!)).toBeGreaterThanOrEqual(drainMs + 5_000);
  });

  it('lets journald keep every access record (its rate limit off for the unit)', () => {
    expect(unit.service('LogRateLimitIntervalSec')).toBe('0');
    expect(unit.service('ExecReload')).toBe('/bin/kill -HUP $MAINPID');
  });

  it('names the operational log inference-router in the journal, apart from the access records, with its levels read', () => {
    expect(unit.service('SyslogIdentifier')).toBe('inference-router');
    expect(unit.service('SyslogIdentifier')).not.toBe(JOURNAL_IDENTIFIER);
    // The lines' `<N>` marks are their priorities only while SyslogLevelPrefix= stays at its default.
    expect(unit.service('SyslogLevelPrefix')).toBeUndefined();
  });

  it('reads systemd time spans as systemd does', () => {
    expect([timeSpanMs('45s'), timeSpanMs('2min'), timeSpanMs('1min 30s'), timeSpanMs('500ms'), timeSpanMs('90')]).toEqual([45_000, 120_000, 90_000, 500, 90_000]);
  });
});
