/**
 * Whether `--kubernetes` has a cluster to talk to, checked before the router starts. The client
 * library looks for $KUBECONFIG, then ~/.kube/config, then a pod's service-account token; with
 * none of them it falls back to http://localhost:8080 and every watch then fails, one retry after
 * another, with a message about TLS that does not say what is missing. A router started that way
 * would never become ready, so it stops at start instead, naming what it looked for.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import type { Cluster, KubeConfig, User } from '@kubernetes/client-node';

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

/**
 * Loads the cluster configuration missingKubeConfig() found, at start: a KUBECONFIG naming a file
 * that is missing or not a kubeconfig would otherwise leave a router that never becomes ready,
 * logging an error that names neither the variable nor the file.
 */
export async function loadKubeConfig(env: NodeJS.ProcessEnv = process.env): Promise<KubeConfig> {
  const k8s = await import('@kubernetes/client-node');
  const kc = new k8s.KubeConfig();
  const from = env.KUBECONFIG ? `KUBECONFIG=${env.KUBECONFIG}` : 'the default places (~/.kube/config, or the pod\'s service account)';
  try {
    kc.loadFromDefault();
  } catch (err) {
    const reason = String((err as Error).message).split('\n')[0];
    throw new Error(`--kubernetes: cannot load the cluster configuration from ${from}: ${reason}; ` +
      'set KUBECONFIG to a readable kubeconfig file, or run the router in the cluster (docs/kubernetes.md)');
  }
  const cluster = kc.getCurrentCluster();
  if (cluster?.server === undefined) {
    throw new Error(`--kubernetes: the cluster configuration from ${from} has no current cluster (current-context: ${JSON.stringify(kc.getCurrentContext() ?? '')}); ` +
      'set current-context to a context whose cluster has a server');
  }
  const user = kc.getCurrentUser();
  const missing = missingCredentialFile(cluster, user);
  if (missing !== null) throw new Error(`--kubernetes: the cluster configuration from ${from}: ${missing}`);
  // A token read from a token-file keeps the file's last newline, which no header can carry:
  // every request would fail, its error quoting the token. kubectl trims it, so does this.
  if (user !== null && typeof user.token === 'string' && user.token !== user.token.trim()) {
    (user as { token?: string }).token = user.token.trim();
  }
  return kc;
}

/**
 * A file the current cluster or user names that is not there (the CA, a client certificate or
 * key), or an exec credential plugin not found on PATH; null when all are. Without this check the
 * router would retry every list forever, each failure said as a connection failure to the API
 * server (no request was sent).
 */
export function missingCredentialFile(cluster: Pick<Cluster, 'caFile'>, user: Pick<User, 'certFile' | 'keyFile' | 'exec'> | null,
  places: { exists: (path: string) => boolean; path: string | undefined } = { exists: existsSync, path: process.env.PATH }): string | null {
  const files: [string, string | undefined][] = [
    ['certificate-authority', cluster.caFile],
    ['client-certificate', user?.certFile],
    ['client-key', user?.keyFile],
  ];
  for (const [field, file] of files) {
    if (file !== undefined && file !== '' && !places.exists(file)) return `the ${field} file ${file} does not exist; fix the path, or give the data inline (${field}-data)`;
  }
  const command: unknown = user?.exec?.command;
  if (typeof command === 'string' && command !== '' && !onPath(command, places)) {
    return `the exec credential plugin ${JSON.stringify(command)} of user ${JSON.stringify((user as { name?: string }).name ?? '')} is not ${command.includes('/') ? 'there' : 'on PATH'}; install it, or give the router another way to authenticate (a token, a client certificate)`;
  }
  return null;
}

/** `command` names a file that is there: a path as given, else found in one of PATH's directories. */
function onPath(command: string, places: { exists: (path: string) => boolean; path: string | undefined }): boolean {
  if (command.includes('/')) return places.exists(command);
  return (places.path ?? '').split(delimiter).some((dir) => dir !== '' && places.exists(join(dir, command)));
}

function safeHome(): string | null {
  try {
    const h = homedir();
    return h === '' ? null : h;
  } catch {
    return null;
  }
}
