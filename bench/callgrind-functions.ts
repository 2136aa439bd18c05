/**
 * Instructions by function from a callgrind dump: each function's self cost (the instructions
 * executed in its own code, not in what it calls). V8's optimised JavaScript has no symbol, so
 * callgrind names it by address (`0x…`); with Node's `--perf-basic-prof` each process writes
 * `/tmp/perf-<pid>.map`, whose lines (`start size name`, hexadecimal) name those addresses.
 */
import { existsSync, readFileSync } from 'node:fs';

/** Self instructions per function name in one dump's text (callgrind's format, names compressed or not). */
export function selfCostByFunction(text: string): Map<string, number> {
  const names = new Map<string, string>();
  const cost = new Map<string, number>();
  let fn = '';
  let callCost = false;
  const nameOf = (spec: string): string => {
    // `(id) name` defines a compressed name, `(id)` uses it, a bare name stands for itself.
    const m = /^\((\d+)\)(?: (.*))?$/.exec(spec);
    if (m === null) return spec;
    if (m[2] !== undefined) names.set(m[1], m[2]);
    return names.get(m[1]) ?? spec;
  };
  for (const line of text.split('\n')) {
    if (line.length === 0) continue;
    const c = line.charCodeAt(0);
    if ((c >= 0x30 && c <= 0x39) || c === 0x2b || c === 0x2d || c === 0x2a) { // digit, +, -, *
      const parts = line.split(' ');
      const n = Number(parts[1]);
      // The line after `calls=` is the inclusive cost of that call: the callee's, not this function's.
      if (callCost) callCost = false;
      else if (Number.isFinite(n)) cost.set(fn, (cost.get(fn) ?? 0) + n);
    } else if (line.startsWith('fn=')) {
      fn = nameOf(line.slice(3));
    } else if (line.startsWith('cfn=') || line.startsWith('cfi=') || line.startsWith('cfl=')) {
      if (line.startsWith('cfn=')) nameOf(line.slice(4)); // a callee's name may be defined here
    } else if (line.startsWith('calls=')) {
      callCost = true;
    }
  }
  return cost;
}

/** Names of code addresses from a perf map; a later entry for the same start wins (code is replaced). */
export class PerfMap {
  readonly #starts: number[] = [];
  readonly #ends: number[] = [];
  readonly #names: string[] = [];

  constructor(text: string) {
    const byStart = new Map<number, { end: number; name: string }>();
    for (const line of text.split('\n')) {
      const a = line.indexOf(' ');
      const b = line.indexOf(' ', a + 1);
      if (a < 0 || b < 0) continue;
      const start = parseInt(line.slice(0, a), 16);
      const size = parseInt(line.slice(a + 1, b), 16);
      if (!Number.isFinite(start) || !Number.isFinite(size)) continue;
      byStart.set(start, { end: start + size, name: line.slice(b + 1) });
    }
    for (const start of [...byStart.keys()].sort((x, y) => x - y)) {
      const e = byStart.get(start)!;
      this.#starts.push(start);
      this.#ends.push(e.end);
      this.#names.push(e.name);
    }
  }

  /** The map's name for a callgrind function named `0x<address>`, else the name unchanged. */
  name(fn: string): string {
    if (!fn.startsWith('0x')) return fn;
    const addr = parseInt(fn.slice(2), 16);
    let lo = 0;
    let hi = this.#starts.length - 1;
    let at = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (this.#starts[mid] <= addr) { at = mid; lo = mid + 1; } else hi = mid - 1;
    }
    return at >= 0 && addr < this.#ends[at] ? this.#names[at] : fn;
  }

  /** The map a process with `--perf-basic-prof` wrote, or an empty one. */
  static ofProcess(pid: number): PerfMap {
    const file = `/tmp/perf-${pid}.map`;
    return new PerfMap(existsSync(file) ? readFileSync(file, 'utf8') : '');
  }
}

/** A named JavaScript function's perf-map name: `JS:<tier mark>name file:line:column`. */
const NAMED_JS = /^(JS:[*~^+]?[^\s*~^+][^\s]* \S+?):\d+:\d+$/;

/**
 * A function's name without the line and column of a named JavaScript function, so that a
 * function compares with itself in a build whose lines moved (an import added above it). An
 * anonymous function (`JS:* file:line:column`) keeps its position: it is all that names it.
 */
export function functionKey(name: string): string {
  const m = NAMED_JS.exec(name);
  return m === null ? name : m[1];
}

/**
 * Adds `from`'s costs into `into`, names mapped through `map`; `tree` (a checkout's path) is cut
 * out of the names, and named functions lose their line (functionKey), so that two builds'
 * functions compare by name.
 */
export function addMapped(into: Map<string, number>, from: ReadonlyMap<string, number>, map: PerfMap, tree = ''): void {
  for (const [fn, n] of from) {
    const mapped = map.name(fn);
    const name = functionKey(tree === '' ? mapped : mapped.replaceAll(tree + '/', ''));
    into.set(name, (into.get(name) ?? 0) + n);
  }
}

/** The `top` largest entries of `costs` (or of their differences from `base`), largest first. */
export function largest(costs: ReadonlyMap<string, number>, top: number, base?: ReadonlyMap<string, number>): [string, number][] {
  const rows: [string, number][] = [];
  const names = new Set([...costs.keys(), ...(base?.keys() ?? [])]);
  for (const n of names) rows.push([n, (costs.get(n) ?? 0) - (base?.get(n) ?? 0)]);
  rows.sort((a, b) => Math.abs(b[1]) - Math.abs(a[1]));
  return rows.slice(0, top);
}
