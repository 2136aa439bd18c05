import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** deploy/systemd/inference-router.service, read as systemd reads it (for the tests). */
export const UNIT_FILE = join(new URL('../../', import.meta.url).pathname, 'deploy/systemd/inference-router.service');
/** Where the unit expects the checkout. */
export const UNIT_CHECKOUT = '/opt/inference-router';

export interface Unit {
  /** Each section's settings in order, a key given twice (Environment=) kept twice. */
  readonly sections: ReadonlyMap<string, readonly (readonly [string, string])[]>;
  /** [Service]'s last value of `key`, or undefined. */
  service(key: string): string | undefined;
  /** ExecStart= split into words (the unit quotes nothing). */
  readonly execStart: readonly string[];
  /** Environment= assignments. */
  readonly env: Readonly<Record<string, string>>;
}

export function readUnit(text = readFileSync(UNIT_FILE, 'utf8')): Unit {
  const sections = new Map<string, [string, string][]>();
  let current: [string, string][] | null = null;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const head = /^\[(.+)\]$/.exec(line);
    if (head !== null) {
      current = [];
      sections.set(head[1]!, current);
      continue;
    }
    const eq = line.indexOf('=');
    if (current === null || eq < 0) throw new Error(`${UNIT_FILE}: not a setting in a section: ${line}`);
    current.push([line.slice(0, eq), line.slice(eq + 1)]);
  }
  const service = sections.get('Service') ?? [];
  const last = (key: string): string | undefined => service.findLast(([k]) => k === key)?.[1];
  const env: Record<string, string> = {};
  for (const [k, v] of service) {
    if (k !== 'Environment') continue;
    for (const pair of v.split(/\s+/)) {
      const i = pair.indexOf('=');
      env[pair.slice(0, i)] = pair.slice(i + 1);
    }
  }
  return { sections, service: last, execStart: (last('ExecStart') ?? '').split(/\s+/), env };
}

/** A systemd time span (`45s`, `2min`, `1min 30s`, `500ms`) in ms. */
export function timeSpanMs(text: string): number {
  const units: Record<string, number> = { ms: 1, s: 1000, sec: 1000, m: 60_000, min: 60_000, h: 3_600_000 };
  let total = 0;
  for (const m of text.trim().matchAll(/(\d+)\s*([a-z]*)/g)) {
    const unit = units[m[2] === '' ? 's' : m[2]!];
    if (unit === undefined) throw new Error(`unknown time unit in ${JSON.stringify(text)}`);
    total += Number(m[1]) * unit;
  }
  return total;
}
