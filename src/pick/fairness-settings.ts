/**
 * Fair queueing from the environment, validated once (docs/scheduling.md#fair-queueing):
 * ROUTER_FAIRNESS_MAX_CONCURRENT (0, the default: off), ROUTER_FAIRNESS_MAX_QUEUED,
 * ROUTER_FAIRNESS_QUEUE_TIMEOUT, ROUTER_FAIRNESS_WINDOW, ROUTER_FAIRNESS_INPUT_TOKEN_WEIGHT,
 * ROUTER_FAIRNESS_OUTPUT_TOKEN_WEIGHT, ROUTER_FAIRNESS_REQUEST_WEIGHT.
 */
import { durationSetting } from '../config/duration-setting.js';
import { badSetting } from '../setting-message.js';

export interface FairnessSettings {
  /** Requests of one router instance in flight to one ModelServer; more wait. */
  readonly maxConcurrent: number;
  /** Requests of one instance waiting for one ModelServer; more are answered 503 fair_queue_full. */
  readonly maxQueued: number;
  /** Longest wait, ms; then 503 fair_queue_timeout. */
  readonly queueTimeoutMs: number;
  /** How far back a tenant's use counts, ms. */
  readonly windowMs: number;
  readonly inputTokenWeight: number;
  readonly outputTokenWeight: number;
  /** What each request adds to its tenant's use besides its tokens (many small requests count). */
  readonly requestWeight: number;
}

export const DEFAULT_FAIRNESS = Object.freeze({
  maxQueued: 1000,
  queueTimeoutMs: 60_000,
  windowMs: 300_000,
  inputTokenWeight: 1,
  outputTokenWeight: 2,
  requestWeight: 0,
});

/** The settings, or null when fair queueing is off (ROUTER_FAIRNESS_MAX_CONCURRENT unset or 0). */
export function parseFairnessSettings(env: NodeJS.ProcessEnv): FairnessSettings | null {
  const maxConcurrent = integer(env, 'ROUTER_FAIRNESS_MAX_CONCURRENT', 0, 0, 1_000_000);
  const maxQueued = integer(env, 'ROUTER_FAIRNESS_MAX_QUEUED', DEFAULT_FAIRNESS.maxQueued, 1, 1_000_000);
  const queueTimeoutMs = durationSetting('ROUTER_FAIRNESS_QUEUE_TIMEOUT', env.ROUTER_FAIRNESS_QUEUE_TIMEOUT, DEFAULT_FAIRNESS.queueTimeoutMs, { min: 1, max: 3_600_000 });
  const windowMs = durationSetting('ROUTER_FAIRNESS_WINDOW', env.ROUTER_FAIRNESS_WINDOW, DEFAULT_FAIRNESS.windowMs, { min: 1_000, max: 86_400_000 });
  const inputTokenWeight = weight(env, 'ROUTER_FAIRNESS_INPUT_TOKEN_WEIGHT', DEFAULT_FAIRNESS.inputTokenWeight);
  const outputTokenWeight = weight(env, 'ROUTER_FAIRNESS_OUTPUT_TOKEN_WEIGHT', DEFAULT_FAIRNESS.outputTokenWeight);
  const requestWeight = weight(env, 'ROUTER_FAIRNESS_REQUEST_WEIGHT', DEFAULT_FAIRNESS.requestWeight);
  if (maxConcurrent === 0) return null;
  return Object.freeze({ maxConcurrent, maxQueued, queueTimeoutMs, windowMs, inputTokenWeight, outputTokenWeight, requestWeight });
}

function integer(env: NodeJS.ProcessEnv, name: string, dflt: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return dflt;
  const text = raw.trim();
  if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > max) throw new Error(badSetting(name, `an integer from ${min} to ${max}`, raw));
  return Number(text);
}

/** A weight: a number from 0 to 1000 (decimals allowed). */
function weight(env: NodeJS.ProcessEnv, name: string, dflt: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return dflt;
  const text = raw.trim();
  const n = Number(text);
  if (!/^\d+(\.\d+)?$/.test(text) || !(n >= 0 && n <= 1000)) throw new Error(badSetting(name, 'a number from 0 to 1000, such as 1 or 2.5', raw));
  return n;
}
