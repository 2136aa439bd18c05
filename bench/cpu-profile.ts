/**
 * Summary of V8 .cpuprofile files (written by `node --cpu-prof`): self time per function and per
 * area (router source folder, package, node internals, GC, idle), summed over all files.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface CallFrame { functionName: string; url: string; lineNumber: number }
export interface ProfileNode { id: number; callFrame: CallFrame; children?: number[] }
export interface CpuProfile { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] }

export interface ProfileSummary {
  readonly files: number;
  /** Sampled ms, idle (and threads blocked waiting for tasks) excluded. */
  readonly busyMs: number;
  readonly idleMs: number;
  readonly topFunctions: readonly { readonly name: string; readonly where: string; readonly selfMs: number; readonly pct: number }[];
  readonly areas: readonly { readonly area: string; readonly selfMs: number; readonly pct: number }[];
}

/** Where a function lives: `router src/<folder>`, `<package>`, `node internals`, or a V8 pseudo-node. */
export function areaOf(url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1];
  if (url.startsWith('node:')) return 'node internals';
  const dist = /\/dist\/([^/]+)\//.exec(url);
  if (dist) return `router src/${dist[1]}`;
  return 'other';
}

function shortUrl(url: string): string {
  const i = url.lastIndexOf('/dist/');
  if (i >= 0) return url.slice(i + 1);
  const m = url.lastIndexOf('node_modules/');
  return m >= 0 ? url.slice(m + 'node_modules/'.length) : url;
}

/**
 * Calls `busy` with the frame and time (µs) of each sample that is CPU work, and returns the time
 * (µs) of the others: idle, and threads blocked in Atomics.wait (piscina's waiting for work).
 */
export function walkSamples(p: CpuProfile, busy: (frame: CallFrame, us: number) => void): number {
  const nodes = new Map(p.nodes.map((n) => [n.id, n]));
  let idle = 0;
  for (let i = 0; i < p.samples.length; i++) {
    const n = nodes.get(p.samples[i]);
    if (n === undefined) continue;
    const us = p.timeDeltas[i] ?? 0;
    if (n.callFrame.functionName === '(idle)' || n.callFrame.functionName === 'atomicsWaitLoop') idle += us;
    else busy(n.callFrame, us);
  }
  return idle;
}

export function summarizeProfiles(dir: string, top = 20): ProfileSummary {
  const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
  const byFn = new Map<string, { name: string; where: string; ms: number }>();
  const byArea = new Map<string, number>();
  let idle = 0;
  let total = 0;
  for (const f of files) {
    const p = JSON.parse(readFileSync(join(dir, f), 'utf8')) as CpuProfile;
    idle += walkSamples(p, ({ functionName, url, lineNumber }, us) => {
      const ms = us / 1000;
      total += ms;
      const where = url === '' ? '' : `${shortUrl(url)}:${lineNumber + 1}`;
      const key = `${functionName}|${where}`;
      const e = byFn.get(key) ?? { name: functionName || '(anonymous)', where, ms: 0 };
      e.ms += ms;
      byFn.set(key, e);
      const area = areaOf(url, functionName);
      byArea.set(area, (byArea.get(area) ?? 0) + ms);
    }) / 1000;
  }
  const pct = (ms: number): number => (total > 0 ? (100 * ms) / total : 0);
  return {
    files: files.length,
    busyMs: total,
    idleMs: idle,
    topFunctions: [...byFn.values()].sort((a, b) => b.ms - a.ms).slice(0, top)
      .map((e) => ({ name: e.name, where: e.where, selfMs: e.ms, pct: pct(e.ms) })),
    areas: [...byArea.entries()].sort((a, b) => b[1] - a[1]).map(([area, ms]) => ({ area, selfMs: ms, pct: pct(ms) })),
  };
}
