/**
 * A worker's auth file source (auth/auth-source.ts). A worker started while the file is
 * unreadable or invalid (a restart after a crash, after a bad edit the running workers rejected)
 * does not fail, which would end in a crash loop and stop the router: it asks the primary, which
 * follows the file too, for the text it last found valid, starts with that, and applies the
 * file's next valid change as every worker does.
 * The auth modules are imported only when there is a file.
 */
import type { AuthSource, AuthLog } from '../auth/auth-source.js';
import type { PrimaryToWorker } from '../primary/messages.js';

/** The started AuthSource for ROUTER_AUTH_CONFIG, or null when there is none. */
export async function startWorkerAuth(file: string | null, log: AuthLog, redisCluster: boolean): Promise<AuthSource | null> {
  if (file === null || file === '') return null;
  // Loaded here, not by the worker's module graph: a worker without an auth file does not load
  // the auth modules, jose and yaml (about 75 ms of a worker's start; docs/internals/performance-changes.md).
  const { AuthSource } = await import('../auth/auth-source.js');
  const source = new AuthSource(file, log, {}, redisCluster);
  try {
    source.start();
  } catch (err) {
    if (process.send === undefined) throw err;
    source.start(undefined, await lastGoodFromPrimary());
  }
  return source;
}

/** Asks the primary for the auth file's last good text (core:auth-wanted → core:auth). */
function lastGoodFromPrimary(): Promise<string> {
  return new Promise((resolve) => {
    const onMessage = (m: unknown): void => {
      const msg = m as PrimaryToWorker | null;
      if (msg === null || typeof msg !== 'object' || msg.t !== 'core:auth') return;
      process.off('message', onMessage);
      resolve(msg.text);
    };
    process.on('message', onMessage);
    process.send!({ t: 'core:auth-wanted' });
  });
}
