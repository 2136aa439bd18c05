import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { accessSync, constants, existsSync, readFileSync, rmSync } from 'node:fs';
import { trackProcess, waitFor } from './processes.js';

/**
 * A real systemd-journald for the tests, as an instance of a journal namespace of its own
 * (`systemd-journald NAMESPACE`, what systemd-journald@.service runs): it makes its sockets in
 * /run/systemd/journal.NAMESPACE/ and keeps its journal in /var/log/journal/MACHINE-ID.NAMESPACE,
 * apart from the machine's journal (if any). Read back with `journalctl --namespace=NAMESPACE`.
 * Needs root (it writes under /run and /var/log) and systemd's binaries.
 */

const JOURNALD = ['/lib/systemd/systemd-journald', '/usr/lib/systemd/systemd-journald'];

/** Why a journald cannot be run here, or null when it can. */
export function journaldUnavailable(): string | null {
  if (process.getuid?.() !== 0) return 'systemd-journald needs root to make its sockets under /run/systemd';
  if (binary() === null) return `no systemd-journald (${JOURNALD.join(' or ')}; Debian's systemd package has it)`;
  if (spawnSync('journalctl', ['--version']).status !== 0) return 'no journalctl (Debian\'s systemd package has it)';
  if (!existsSync('/etc/machine-id')) return 'no /etc/machine-id, which journald names its journal by';
  return null;
}

function binary(): string | null {
  for (const path of JOURNALD) {
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // next
    }
  }
  return null;
}

/** One journal entry as `journalctl -o json` prints it (fields as strings). */
export type JournalEntry = Record<string, string>;

export interface Journald {
  readonly namespace: string;
  /** Its stream socket, where a service's stdout is connected. */
  readonly stdoutPath: string;
  /** Every entry so far, oldest first. */
  entries(): JournalEntry[];
  /** Entries whose SYSLOG_IDENTIFIER is `identifier`. */
  entriesOf(identifier: string): JournalEntry[];
  /** Stops it (SIGTERM; its streams close) and starts it again on the same namespace. */
  restart(): Promise<void>;
  /** Stops it and removes its sockets and its journal. */
  stop(): Promise<void>;
}

export async function startJournald(): Promise<Journald> {
  const why = journaldUnavailable();
  if (why !== null) throw new Error(why);
  const namespace = `irtest${process.pid}x${Math.floor(Math.random() * 1e6)}`;
  const dir = `/run/systemd/journal.${namespace}`;
  const stdoutPath = `${dir}/stdout`;
  const machineId = readFileSync('/etc/machine-id', 'utf8').trim();
  let child: ChildProcess | null = null;
  let output = '';

  const start = async (): Promise<void> => {
    rmSync(stdoutPath, { force: true });
    const c = spawn(binary() as string, [namespace], { stdio: ['ignore', 'pipe', 'pipe'] });
    trackProcess(c);
    c.stdout?.on('data', (d: Buffer) => { output += d.toString(); });
    c.stderr?.on('data', (d: Buffer) => { output += d.toString(); });
    child = c;
    await waitFor(`systemd-journald ${namespace} to listen (${output})`, () => existsSync(stdoutPath) || c.exitCode !== null);
    if (c.exitCode !== null) throw new Error(`systemd-journald ${namespace} exited ${c.exitCode}: ${output}`);
  };
  const halt = async (): Promise<void> => {
    const c = child;
    child = null;
    if (c === null || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((resolve) => c.once('exit', resolve));
    c.kill('SIGTERM');
    await exited;
  };
  const entries = (): JournalEntry[] => {
    const r = spawnSync('journalctl', [`--namespace=${namespace}`, '-o', 'json', '--no-pager', '-q'], { encoding: 'utf8', maxBuffer: 64 << 20 });
    if (r.status !== 0) throw new Error(`journalctl --namespace=${namespace} failed (${r.status}): ${r.stderr}`);
    return r.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as JournalEntry);
  };

  await start();
  return {
    namespace,
    stdoutPath,
    entries,
    entriesOf: (identifier) => entries().filter((e) => e.SYSLOG_IDENTIFIER === identifier),
    async restart() {
      await halt();
      await start();
    },
    async stop() {
      await halt();
      rmSync(dir, { recursive: true, force: true });
      rmSync(`/var/log/journal/${machineId}.${namespace}`, { recursive: true, force: true });
      rmSync(`/run/log/journal/${machineId}.${namespace}`, { recursive: true, force: true });
    },
  };
}
