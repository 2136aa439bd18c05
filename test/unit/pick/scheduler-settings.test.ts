import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_OUTLIER, parseSchedulerSettings } from '../../../src/pick/scheduler-settings.js';

describe('parseSchedulerSettings', () => {
  it('defaults', () => {
    const s = parseSchedulerSettings({});
    expect(s.outlier).toEqual(DEFAULT_OUTLIER);
    expect(s.outlier.consecutive5xx).toBe(5);
    expect(s.podMetricsIntervalMs).toBe(1000);
  });

  it('reads the outlier settings and the pod metrics interval', () => {
    const s = parseSchedulerSettings({
      ROUTER_OUTLIER_CONSECUTIVE_FAILURES: '5', ROUTER_OUTLIER_CONSECUTIVE_5XX: '0', ROUTER_OUTLIER_BASE_EJECTION: '2s', ROUTER_OUTLIER_MAX_EJECTION: '1m', ROUTER_POD_METRICS_INTERVAL: '250ms',
    });
    expect(s.outlier).toEqual({ consecutiveFailures: 5, consecutive5xx: 0, baseEjectionMs: 2000, maxEjectionMs: 60_000 });
    expect(s.podMetricsIntervalMs).toBe(250);
  });

  it.each([
    [{ ROUTER_OUTLIER_CONSECUTIVE_FAILURES: '0' }, /^ROUTER_OUTLIER_CONSECUTIVE_FAILURES: expected an integer from 1 to 1000; got "0"$/],
    [{ ROUTER_OUTLIER_CONSECUTIVE_FAILURES: '2.5' }, /ROUTER_OUTLIER_CONSECUTIVE_FAILURES/],
    [{ ROUTER_OUTLIER_CONSECUTIVE_5XX: '-1' }, /^ROUTER_OUTLIER_CONSECUTIVE_5XX: expected an integer from 0 to 1000; got "-1"$/],
    [{ ROUTER_OUTLIER_CONSECUTIVE_5XX: '1001' }, /^ROUTER_OUTLIER_CONSECUTIVE_5XX: expected an integer from 0 to 1000; got "1001"$/],
    [{ ROUTER_OUTLIER_CONSECUTIVE_5XX: 'five' }, /ROUTER_OUTLIER_CONSECUTIVE_5XX/],
    [{ ROUTER_OUTLIER_BASE_EJECTION: 'soon' }, /^ROUTER_OUTLIER_BASE_EJECTION: expected a duration from 1ms to 1h, .*got "soon" \(invalid duration/],
    [{ ROUTER_OUTLIER_BASE_EJECTION: '10s', ROUTER_OUTLIER_MAX_EJECTION: '5s' }, /must not be below ROUTER_OUTLIER_BASE_EJECTION/],
    [{ ROUTER_POD_METRICS_INTERVAL: '10ms' }, /^ROUTER_POD_METRICS_INTERVAL: expected a duration from 50ms to 1h/],
    [{ ROUTER_POD_METRICS_INTERVAL: '1' }, /ROUTER_POD_METRICS_INTERVAL/],
  ])('rejects %o', (env, message) => {
    expect(() => parseSchedulerSettings(env)).toThrow(message);
  });

  it('ROUTER_SCHEDULER_CONFIG: reads the YAML file once; a missing or bad file names the variable', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ir-sched-'));
    const good = join(dir, 'good.yaml');
    writeFileSync(good, 'scorers: { kv-cache: 2 }\n');
    expect(parseSchedulerSettings({ ROUTER_SCHEDULER_CONFIG: good }).config.weights).toEqual({ 'least-request': 0, 'least-latency': 0, 'prefix-cache': 0, 'kv-cache': 2 });
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, 'scorers: { kv-cache: two }\n');
    expect(() => parseSchedulerSettings({ ROUTER_SCHEDULER_CONFIG: bad })).toThrow(`ROUTER_SCHEDULER_CONFIG ${bad}: scorers.kv-cache: expected a number`);
    expect(() => parseSchedulerSettings({ ROUTER_SCHEDULER_CONFIG: join(dir, 'missing.yaml') })).toThrow(/ROUTER_SCHEDULER_CONFIG: cannot read .*missing\.yaml/);
  });
});
