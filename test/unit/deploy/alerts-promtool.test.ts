/**
 * The alerting rules (deploy/observability/alerts.yaml, the same file as the chart's
 * files/alerts.yaml) checked and exercised by Prometheus's own promtool: `check rules` (PromQL
 * and rule syntax) and `test rules` on deploy/observability/alerts.test.yaml, which feeds each
 * alert the series it is written for and its neighbouring quiet case, and checks when it fires,
 * with which labels and annotations. promtool comes from Debian's `prometheus` package (.ci/run
 * installs it); where it cannot be had (PROMTOOL, PATH) these tests are skipped with the reason.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';

const ROOT = new URL('../../../', import.meta.url).pathname;
const RULES = join(ROOT, 'deploy/observability/alerts.yaml');
const CHART_RULES = join(ROOT, 'deploy/helm/inference-router/files/alerts.yaml');
const RULE_TESTS = join(ROOT, 'deploy/observability/alerts.test.yaml');

function findPromtool(): string | null {
  for (const bin of [process.env.PROMTOOL, 'promtool'].filter((b): b is string => !!b)) {
    if (spawnSync(bin, ['--version'], { encoding: 'utf8' }).status === 0) return bin;
  }
  return null;
}
const PROMTOOL = findPromtool();

function promtool(args: string[]): { status: number | null; out: string } {
  const r = spawnSync(PROMTOOL!, args, { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

// Shown as a skipped test, with the reason, where promtool cannot be had.
if (PROMTOOL === null) test.skip('alerting rules under promtool: no promtool (Debian package prometheus; or set PROMTOOL)', () => {});

describe.skipIf(PROMTOOL === null)('alerting rules under promtool', () => {
  test('the chart ships the same rules file', () => {
    expect(readFileSync(CHART_RULES, 'utf8')).toBe(readFileSync(RULES, 'utf8'));
  });

  test('promtool check rules accepts every rule', () => {
    const r = promtool(['check', 'rules', RULES]);
    expect(r.out).toContain('SUCCESS: 10 rules found');
    expect(r.status).toBe(0);
  });

  test('every alert is exercised by the rule tests', () => {
    const alerts = [...readFileSync(RULES, 'utf8').matchAll(/- alert: (\w+)/g)].map((m) => m[1]);
    const tested = new Set([...readFileSync(RULE_TESTS, 'utf8').matchAll(/alertname: (\w+)/g)].map((m) => m[1]));
    expect(alerts.length).toBeGreaterThan(0);
    expect(alerts.filter((a) => !tested.has(a))).toEqual([]);
  });

  test('promtool test rules: each alert fires when and as written, and not on its quiet case', () => {
    const r = promtool(['test', 'rules', RULE_TESTS]);
    expect(r.out).toContain('SUCCESS');
    expect(r.status).toBe(0);
  });
});

describe.skipIf(PROMTOOL === null)('a scrape under promtool check metrics', () => {
  test('a worker\'s metrics, prom-client\'s defaults included, pass its lint (a CI linting the scrape does not fail)', async () => {
    const { RouterMetrics } = await import('../../../src/observe/metrics.js');
    const metrics = new RouterMetrics({});
    const text = await metrics.metrics();
    expect(text).toContain('nodejs_active_handles');
    const r = spawnSync(PROMTOOL!, ['check', 'metrics'], { input: text, encoding: 'utf8', timeout: 30_000 });
    expect(`${r.stdout}${r.stderr}`).toBe('');
    expect(r.status).toBe(0);
  });
});
