import type { ResourceSnapshot } from '../config/resource-types.js';
import type { PodEpochs } from '../observe/backend-pod-epochs.js';
import type { AuthConfigWire } from '../auth/auth-config-wire.js';

/** Core messages between the primary and its workers (other modules use other `t` prefixes). */
export type PrimaryToWorker =
  /**
   * `podEpochs`: by backend pod, the version of the configuration it entered (observe/backend-pod-epochs.ts);
   * `routesVersion`: the version of the snapshot its routes came with (below its own after changes of ModelServers only).
   */
  | { t: 'core:snapshot'; snapshot: ResourceSnapshot; routesVersion: number; podEpochs: PodEpochs }
  /**
   * Snapshot `version`, whose routes are those of snapshot `routesVersion` (a change of ModelServers
   * only: their pods moved, say): the worker builds its table on the one it has
   * (route/route-table.ts), or asks for the whole snapshot (`core:snapshot-wanted`) when its routes
   * are another version's.
   */
  | { t: 'core:servers'; version: number; routesVersion: number; servers: ResourceSnapshot['servers']; createdAt: number; podEpochs: PodEpochs }
  | { t: 'core:ready'; ready: boolean }
  | { t: 'core:drain' }
  /** Drain this worker alone, without the drain delay: it is replaced (a certificate rotation). */
  | { t: 'core:retire' }
  /** Answer to `core:starting`, after the snapshot if there is one: open the listener. */
  | { t: 'core:listen' }
  | { t: 'core:reopen-log' }
  /** Answer to a worker's `core:ping` (worker/primary-heartbeat.ts). */
  | { t: 'core:pong' }
  /** The auth file's config in use: the answer to `core:auth-wanted`, then each valid change (worker/worker-auth.ts). */
  | { t: 'core:auth'; config: AuthConfigWire };

export type WorkerToPrimary =
  /** Ready to open its listener: the primary sends the snapshot (if any) and readiness, then `core:listen`. */
  | { t: 'core:starting' }
  | { t: 'core:listening' }
  /** The worker compiled snapshot `version` and its limit stores have connected or failed. */
  | { t: 'core:applied'; version: number }
  | { t: 'core:fatal'; message: string }
  /** Heartbeat: the primary answers `core:pong` at once when its event loop is free. */
  | { t: 'core:ping' }
  /** Each second while serving, unanswered: the primary's watchdog hears the worker's event loop turn (primary/worker-watchdog.ts). */
  | { t: 'core:alive' }
  /** A starting worker asks for the auth file's config in use. */
  | { t: 'core:auth-wanted' }
  /** A `core:servers` came for routes this worker does not have (it kept an older snapshot): the primary sends the whole one in use. */
  | { t: 'core:snapshot-wanted' };

export function isCoreMessage(m: unknown): m is { t: string } {
  return m !== null && typeof m === 'object' && typeof (m as { t?: unknown }).t === 'string' && (m as { t: string }).t.startsWith('core:');
}
