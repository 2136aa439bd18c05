/**
 * The scheduler configuration (ROUTER_SCHEDULER_CONFIG, a YAML file; docs/scheduling.md):
 *
 *   scorers:                 # weight of each scorer; 0 or absent = off
 *     least-request: 1.5
 *     least-latency: 0.25
 *     prefix-cache: 1
 *     kv-cache: 0
 *   queueFilter:
 *     maxWaiting: 16         # pods with more waiting requests are left out while another is at or below
 *   prefixCache:
 *     blockChars: 256        # prompt characters per hashed block
 *     maxBlocks: 64          # blocks hashed per request (the first ones)
 *     capacity: 65536        # block hashes remembered per process
 */
import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';

/**
 * yaml, loaded by the first scheduler file parsed (a synchronous require: settings are parsed
 * synchronously). Every process parses its settings, and a worker reads no other YAML (the primary
 * sends it compiled snapshots): without ROUTER_SCHEDULER_CONFIG a worker does not load yaml.
 */
const yaml = (): typeof Yaml => createRequire(import.meta.url)('yaml') as typeof Yaml;

export const SCORERS = ['least-request', 'least-latency', 'prefix-cache', 'kv-cache'] as const;
export type ScorerName = (typeof SCORERS)[number];

export interface SchedulerConfig {
  /** Weight per scorer, in SCORERS order. */
  readonly weights: Readonly<Record<ScorerName, number>>;
  /** Waiting-queue length above which a pod is filtered out (while another is at or below). */
  readonly maxWaiting: number;
  readonly prefixBlockChars: number;
  readonly prefixMaxBlocks: number;
  readonly prefixCapacity: number;
}

/** As the reference router: least-request + prefix-cache + least-latency (weights from bench/scheduler-sim.ts). */
export const DEFAULT_SCHEDULER_CONFIG: SchedulerConfig = Object.freeze({
  weights: Object.freeze({ 'least-request': 1.5, 'least-latency': 0.25, 'prefix-cache': 1, 'kv-cache': 0 }),
  maxWaiting: 16,
  prefixBlockChars: 256,
  prefixMaxBlocks: 64,
  prefixCapacity: 65_536,
});

/** Parses the YAML text; throws an Error naming `where` and the field. */
export function parseSchedulerConfig(text: string, where: string): SchedulerConfig {
  let doc: unknown;
  try {
    doc = yaml().parse(text);
  } catch (err) {
    throw new Error(`${where}: not valid YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  if (doc === null || doc === undefined) return DEFAULT_SCHEDULER_CONFIG;
  const top = mapping(doc, where, '(top level)', ['scorers', 'queueFilter', 'prefixCache']);
  const weights = { ...DEFAULT_SCHEDULER_CONFIG.weights };
  if (top.scorers !== undefined && top.scorers !== null) {
    const s = mapping(top.scorers, where, 'scorers', SCORERS);
    for (const name of SCORERS) weights[name] = s[name] === undefined || s[name] === null ? 0 : num(s[name], where, `scorers.${name}`, 0, 1000, false);
    if (SCORERS.every((n) => weights[n] === 0)) throw new Error(`${where}: scorers: at least one scorer needs a weight above 0`);
  }
  const q = top.queueFilter === undefined || top.queueFilter === null ? {} : mapping(top.queueFilter, where, 'queueFilter', ['maxWaiting']);
  const p = top.prefixCache === undefined || top.prefixCache === null ? {} : mapping(top.prefixCache, where, 'prefixCache', ['blockChars', 'maxBlocks', 'capacity']);
  const d = DEFAULT_SCHEDULER_CONFIG;
  return Object.freeze({
    weights: Object.freeze(weights),
    maxWaiting: q.maxWaiting === undefined ? d.maxWaiting : num(q.maxWaiting, where, 'queueFilter.maxWaiting', 0, 1e9, true),
    prefixBlockChars: p.blockChars === undefined ? d.prefixBlockChars : num(p.blockChars, where, 'prefixCache.blockChars', 16, 1 << 20, true),
    prefixMaxBlocks: p.maxBlocks === undefined ? d.prefixMaxBlocks : num(p.maxBlocks, where, 'prefixCache.maxBlocks', 1, 4096, true),
    prefixCapacity: p.capacity === undefined ? d.prefixCapacity : num(p.capacity, where, 'prefixCache.capacity', 1, 1 << 24, true),
  });
}

function mapping(v: unknown, where: string, path: string, keys: readonly string[]): Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error(`${where}: ${path}: expected a mapping`);
  for (const k of Object.keys(v)) {
    if (!keys.includes(k)) throw new Error(`${where}: ${path === '(top level)' ? '' : `${path}.`}${k}: unknown field (expected one of ${keys.join(', ')})`);
  }
  return v as Record<string, unknown>;
}

function num(v: unknown, where: string, path: string, min: number, max: number, integer: boolean): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max || (integer && !Number.isInteger(v))) {
    throw new Error(`${where}: ${path}: expected ${integer ? 'an integer' : 'a number'} from ${min} to ${max}, got ${JSON.stringify(v)}`);
  }
  return v;
}
