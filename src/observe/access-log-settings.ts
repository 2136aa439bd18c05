/**
 * Access-log settings from the environment, validated once and frozen (docs/access-log.md).
 */
import { Buffer } from 'node:buffer';
import { durationSetting } from '../config/duration-setting.js';
import { alternatives, badSetting } from '../setting-message.js';

export type AccessLogFormat = 'json' | 'text';

export interface AccessLogSettings {
  readonly enabled: boolean;
  readonly format: AccessLogFormat;
  /** 'stdout', 'stderr' or a file path. */
  readonly output: string;
  /** Bound on bytes queued for the sink; records beyond it are dropped and counted. */
  readonly bufferBytes: number;
  /**
   * Longest time a record waits to be gathered with later ones before it is written, ms; 0 =
   * written at the end of the event-loop turn that logged it. A full batch is written at once.
   */
  readonly flushIntervalMs: number;
  /**
   * The journal's stdout socket that each process opens a stream of its own to, when its stdout
   * or stderr (the output) is the journal's (JOURNAL_STREAM; access-log-journal.ts); null: off,
   * the records go to the inherited stdout/stderr.
   */
  readonly journalSocket: string | null;
}

export const DEFAULT_BUFFER_BYTES = 16 * 1024 * 1024;
/** Smallest accepted buffer bound: a few whole batches. */
export const MIN_BUFFER_BYTES = 64 * 1024;

export const DEFAULT_FLUSH_INTERVAL_MS = 100;
export const MAX_FLUSH_INTERVAL_MS = 10_000;

/** systemd-journald's stream socket; a unit with LogNamespace=NS (LOG_NAMESPACE) has journal.NS's. */
export const JOURNAL_SOCKET = '/run/systemd/journal/stdout';
/** sockaddr_un's sun_path holds 108 bytes, the last a NUL. */
const MAX_SOCKET_PATH_BYTES = 107;

function oneOf<T extends string>(env: NodeJS.ProcessEnv, name: string, allowed: readonly T[], dflt: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return dflt;
  if ((allowed as readonly string[]).includes(raw)) return raw as T;
  throw new Error(badSetting(name, alternatives(allowed), raw));
}

function output(env: NodeJS.ProcessEnv): string {
  const raw = env.ACCESS_LOG_OUTPUT;
  if (raw === undefined || raw === '') return 'stdout';
  if (raw.trim() !== raw || raw.includes('\0')) {
    throw new Error(badSetting('ACCESS_LOG_OUTPUT', 'stdout, stderr or a file path, without white space around it', raw));
  }
  return raw;
}

function bufferBytes(env: NodeJS.ProcessEnv): number {
  const raw = env.ACCESS_LOG_BUFFER_BYTES;
  if (raw === undefined || raw === '') return DEFAULT_BUFFER_BYTES;
  const n = /^[0-9]+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < MIN_BUFFER_BYTES) {
    throw new Error(badSetting('ACCESS_LOG_BUFFER_BYTES', `an integer number of bytes of at least ${MIN_BUFFER_BYTES}`, raw));
  }
  return n;
}

/** A Go-style duration (100ms, 1s) or a bare number of milliseconds, from 0 to 10s. */
function flushInterval(env: NodeJS.ProcessEnv): number {
  return durationSetting('ACCESS_LOG_FLUSH_INTERVAL', env.ACCESS_LOG_FLUSH_INTERVAL, DEFAULT_FLUSH_INTERVAL_MS, { min: 0, max: MAX_FLUSH_INTERVAL_MS });
}

/** ACCESS_LOG_JOURNAL_SOCKET: off, or an absolute socket path; by default the journal's (of LOG_NAMESPACE's namespace, if set). */
function journalSocket(env: NodeJS.ProcessEnv): string | null {
  const raw = env.ACCESS_LOG_JOURNAL_SOCKET;
  if (raw === undefined || raw === '') {
    const ns = env.LOG_NAMESPACE;
    return ns === undefined || ns === '' ? JOURNAL_SOCKET : `/run/systemd/journal.${ns}/stdout`;
  }
  if (raw === 'off') return null;
  if (!raw.startsWith('/') || raw.trim() !== raw || raw.includes('\0') || Buffer.byteLength(raw) > MAX_SOCKET_PATH_BYTES) {
    throw new Error(badSetting('ACCESS_LOG_JOURNAL_SOCKET', `off, or the absolute path of the journal's stdout socket (at most ${MAX_SOCKET_PATH_BYTES} bytes)`, raw));
  }
  return raw;
}

/**
 * Reads ACCESS_LOG_ENABLED, ACCESS_LOG_FORMAT, ACCESS_LOG_OUTPUT, ACCESS_LOG_BUFFER_BYTES,
 * ACCESS_LOG_FLUSH_INTERVAL, ACCESS_LOG_JOURNAL_SOCKET. Throws on a bad value.
 */
export function parseAccessLogSettings(env: NodeJS.ProcessEnv): AccessLogSettings {
  return Object.freeze({
    enabled: oneOf(env, 'ACCESS_LOG_ENABLED', ['true', 'false'], 'true') === 'true',
    format: oneOf<AccessLogFormat>(env, 'ACCESS_LOG_FORMAT', ['json', 'text'], 'text'),
    output: output(env),
    bufferBytes: bufferBytes(env),
    flushIntervalMs: flushInterval(env),
    journalSocket: journalSocket(env),
  });
}
