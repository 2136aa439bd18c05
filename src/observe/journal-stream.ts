/**
 * Whether a standard descriptor is systemd's stream to the journal: the access log then opens a
 * stream of its own (access-log-journal.ts), and the operational log marks each line's level for
 * journald (ops-log.ts).
 */
import { fstatSync } from 'node:fs';

/**
 * Whether `fd` is the journal's stream the service manager connected it to: systemd sets
 * JOURNAL_STREAM to that socket's "DEVICE:INODE" (systemd.exec(5), "Environment variables").
 */
export function isJournalStream(fd: number, journalStream: string | undefined): boolean {
  const m = /^([0-9]+):([0-9]+)$/.exec(journalStream ?? '');
  if (m === null) return false;
  try {
    const st = fstatSync(fd, { bigint: true });
    return st.isSocket() && st.dev === BigInt(m[1] as string) && st.ino === BigInt(m[2] as string);
  } catch {
    return false;
  }
}
