/**
 * Resident memory of processes, from /proc/<pid>/status (VmRSS, RssAnon; kB). The anonymous part
 * is what a process built for itself (heaps, tables); the rest is mapped files (code) and shared
 * memory. A process that has ended counts nothing.
 */
import { readFileSync } from 'node:fs';

export interface Resident {
  /** Bytes resident in all. */
  readonly rss: number;
  /** Bytes resident that no file backs. */
  readonly anon: number;
}

/** VmRSS and RssAnon of one status file's text, in bytes (0 where a line is missing). */
export function parseResident(status: string): Resident {
  const kb = (name: string): number => {
    const m = new RegExp(`^${name}:\\s+(\\d+) kB$`, 'm').exec(status);
    return m === null ? 0 : Number(m[1]) * 1024;
  };
  return { rss: kb('VmRSS'), anon: kb('RssAnon') };
}

/** The resident memory of `pids`, summed; `proc` is where /proc is (tests pass a fake tree). */
export function residentOf(pids: readonly number[], proc = '/proc'): Resident {
  let rss = 0;
  let anon = 0;
  for (const pid of pids) {
    let status: string;
    try {
      status = readFileSync(`${proc}/${pid}/status`, 'utf8');
    } catch {
      continue;
    }
    const r = parseResident(status);
    rss += r.rss;
    anon += r.anon;
  }
  return { rss, anon };
}
