/**
 * Settings of pod choice from the environment, validated once (docs/scheduling.md):
 * ROUTER_OUTLIER_* (passive health), ROUTER_POD_METRICS_INTERVAL (pod metrics scraping),
 * ROUTER_SCHEDULER_CONFIG (scorers, read once at start).
 */
import { durationSetting } from '../config/duration-setting.js';
import { badSetting } from '../setting-message.js';
import { readFileSync } from 'node:fs';
import type { OutlierSettings } from './outlier-detector.js';
import { DEFAULT_SCHEDULER_CONFIG, parseSchedulerConfig, type SchedulerConfig } from './scheduler-config.js';

export interface SchedulerSettings {
  readonly outlier: OutlierSettings;
  /** How often the primary scrapes each pod's /metrics, ms. */
  readonly podMetricsIntervalMs: number;
  /** Scorer weights, queue filter, prefix cache. */
  readonly config: SchedulerConfig;
}

export const DEFAULT_OUTLIER: OutlierSettings = Object.freeze({
  consecutiveFailures: 3,
  consecutive5xx: 5,
  baseEjectionMs: 5_000,
  maxEjectionMs: 300_000,
});
export const DEFAULT_POD_METRICS_INTERVAL_MS = 1_000;

function duration(env: NodeJS.ProcessEnv, name: string, dflt: number, minMs: number, maxMs: number): number {
  return durationSetting(name, env[name], dflt, { min: minMs, max: maxMs });
}

function integer(env: NodeJS.ProcessEnv, name: string, dflt: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return dflt;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new Error(badSetting(name, `an integer from ${min} to ${max}`, raw));
  }
  return Number(raw);
}

export function parseSchedulerSettings(env: NodeJS.ProcessEnv): SchedulerSettings {
  const consecutiveFailures = integer(env, 'ROUTER_OUTLIER_CONSECUTIVE_FAILURES', DEFAULT_OUTLIER.consecutiveFailures, 1, 1000);
  const consecutive5xx = integer(env, 'ROUTER_OUTLIER_CONSECUTIVE_5XX', DEFAULT_OUTLIER.consecutive5xx, 0, 1000);
  const baseEjectionMs = duration(env, 'ROUTER_OUTLIER_BASE_EJECTION', DEFAULT_OUTLIER.baseEjectionMs, 1, 3_600_000);
  const maxEjectionMs = duration(env, 'ROUTER_OUTLIER_MAX_EJECTION', Math.max(DEFAULT_OUTLIER.maxEjectionMs, baseEjectionMs), 1, 86_400_000);
  if (maxEjectionMs < baseEjectionMs) {
    throw new Error(`ROUTER_OUTLIER_MAX_EJECTION (${maxEjectionMs}ms) must not be below ROUTER_OUTLIER_BASE_EJECTION (${baseEjectionMs}ms)`);
  }
  return {
    outlier: { consecutiveFailures, consecutive5xx, baseEjectionMs, maxEjectionMs },
    podMetricsIntervalMs: duration(env, 'ROUTER_POD_METRICS_INTERVAL', DEFAULT_POD_METRICS_INTERVAL_MS, 50, 3_600_000),
    config: schedulerConfig(env.ROUTER_SCHEDULER_CONFIG),
  };
}

function schedulerConfig(file: string | undefined): SchedulerConfig {
  if (file === undefined || file === '') return DEFAULT_SCHEDULER_CONFIG;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`ROUTER_SCHEDULER_CONFIG: cannot read ${file}: ${(err as Error).message}`);
  }
  return parseSchedulerConfig(text, `ROUTER_SCHEDULER_CONFIG ${file}`);
}
