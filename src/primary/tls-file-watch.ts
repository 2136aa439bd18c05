/**
 * The primary's watch of ROUTER_TLS_CERT_FILE and ROUTER_TLS_KEY_FILE (config/file-watch.ts: a
 * symlink swap of a mounted Secret, a rename, an in-place write, and a poll where inotify is
 * missing) feeding the certificate rotation (tls-rotation.ts). A pair written file by file within
 * SETTLE_MS is checked once, whole.
 */
import { readFileSync } from 'node:fs';
import { readListenerTlsPair, type ListenerTls, type ListenerTlsPair } from '../config/listener-tls.js';
import { FileWatch, SETTLE_MS } from '../config/file-watch.js';
import type { OpsLog } from '../observe/ops-log.js';
import { TlsRotation } from './tls-rotation.js';
import { checkServable } from './tls-pair-servable.js';
import { CertificateExpiryWatch } from './certificate-expiry.js';
import { systemClock } from '../clock.js';
import { nodeTimers } from '../timers.js';

export interface TlsFileWatch {
  /** The pair the workers serve (the certificate's notAfter: when it expires). */
  served(): ListenerTlsPair;
  stop(): void;
}

/** Starts watching `files`; `rotate` rolls a valid new pair out to the workers (rolling-replacement.ts). */
export function watchTlsFiles(files: ListenerTls, served: ListenerTlsPair, rotate: (pair: ListenerTlsPair) => Promise<void>, ops: OpsLog): TlsFileWatch {
  // The served certificate's expiry, said in the log as it nears (checked again after each rotation).
  const expiry = new CertificateExpiryWatch(() => rotation.served, { warn: (m, f) => ops.warn('tls', m, f), error: (m, f) => ops.error('tls', m, f) }, systemClock, nodeTimers);
  const rotation = new TlsRotation({
    files,
    served,
    readTexts: (f) => `${readOrNull(f.certFile)}\0${readOrNull(f.keyFile)}`,
    check: (f) => {
      const pair = readListenerTlsPair(f.certFile, f.keyFile);
      checkServable(f);
      return pair;
    },
    rotate,
    rotated: () => expiry.check(),
    info: (m, fields) => ops.info('tls', m, fields),
    warn: (m, fields) => ops.warn('tls', m, fields),
  });
  let settle: NodeJS.Timeout | null = null;
  const changed = (): void => {
    if (settle !== null) clearTimeout(settle);
    settle = setTimeout(() => {
      settle = null;
      void rotation.changed();
    }, SETTLE_MS);
    settle.unref();
  };
  const watches = [...new Set([files.certFile, files.keyFile])].map((f) => new FileWatch(f, changed, { fastPollMs: 250, log: (m) => ops.warn('tls', m) }));
  for (const w of watches) w.start();
  expiry.start();
  return {
    served: () => rotation.served,
    stop: () => {
      expiry.stop();
      rotation.stop();
      if (settle !== null) clearTimeout(settle);
      for (const w of watches) w.stop();
    },
  };
}

/** The file's text, or null when it cannot be read. */
function readOrNull(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}
