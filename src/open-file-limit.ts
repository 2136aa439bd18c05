import { readFileSync } from 'node:fs';

/** The process's soft open-file limit from /proc/self/limits; null when unknown or unlimited. */
export function openFileLimit(read: () => string = () => readFileSync('/proc/self/limits', 'utf8')): number | null {
  try {
    const m = /^Max open files\s+(\d+)\s/m.exec(read());
    return m === null ? null : Number(m[1]);
  } catch {
    return null;
  }
}
