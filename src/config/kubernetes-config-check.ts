/**
 * Whether `--kubernetes` has a cluster to talk to, checked before the router starts. The client
 * library looks for $KUBECONFIG, then ~/.kube/config, then a pod's service-account token; with
 * none of them it falls back to http://localhost:8080 and every watch then fails, one retry after
 * another, with a message about TLS that does not say what is missing. A router started that way
 * would never become ready, so it stops at start instead, naming what it looked for.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** Where a pod's service-account token is mounted (in-cluster configuration). */
export const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

export interface KubeConfigPlaces {
  readonly env: NodeJS.ProcessEnv;
  /** The home directory, or null when there is none. */
  readonly home: string | null;
  readonly exists: (path: string) => boolean;
}

const HERE: KubeConfigPlaces = { env: process.env, home: safeHome(), exists: existsSync };

/** Null when a configuration is there to load; else the message to stop with. */
export function missingKubeConfig(p: KubeConfigPlaces = HERE): string | null {
  const kubeconfig = p.env.KUBECONFIG;
  if (kubeconfig !== undefined && kubeconfig !== '') return null;
  const userConfig = p.home === null ? null : join(p.home, '.kube', 'config');
  if (userConfig !== null && p.exists(userConfig)) return null;
  if (p.exists(SERVICE_ACCOUNT_TOKEN)) return null;
  return '--kubernetes: no cluster configuration found: KUBECONFIG is not set, ' +
    `${userConfig === null ? 'there is no home directory for ~/.kube/config' : `${userConfig} does not exist`}, ` +
    `and this is not a pod with a service-account token (${SERVICE_ACCOUNT_TOKEN}); ` +
    'set KUBECONFIG to a kubeconfig file, or run the router in the cluster (docs/kubernetes.md)';
}

function safeHome(): string | null {
  try {
    const h = homedir();
    return h === '' ? null : h;
  } catch {
    return null;
  }
}
