/**
 * A worker's authentication (docs/auth.md). The primary alone reads and parses the auth file
 * (auth/auth-source.ts); a worker asks it for the config in use as it starts (`core:auth-wanted`),
 * and is sent each valid change as the primary applies it (`core:auth`, the config in the JSON form
 * of auth/auth-config-wire.ts). So a worker parses no YAML, a change costs the machine one parse
 * instead of one per process, and a worker started while the file is invalid (a restart after a
 * crash, after a bad edit) starts with the config the others use instead of failing at start.
 * The auth modules are imported only when there is a file.
 */
import type { Authenticator } from '../auth/authenticator.js';
import type { AuthConfig } from '../auth/auth-config.js';
import type { AuthConfigWire } from '../auth/auth-config-wire.js';
import type { Exchange } from '../http/exchange.js';
import type { Tenant } from '../auth/tenant.js';
import type { RateLimitSpec } from '../config/resource-types.js';
import type { PrimaryToWorker } from '../primary/messages.js';

/** What the worker's pipeline and limiter take of its authentication. */
export interface WorkerAuth {
  /**
   * The pipeline's `authorize` hook: the caller's tenant, or throws RouterError 401/403 (sync for
   * API keys, a promise for JWTs). Bound, so it can be handed over as is.
   */
  readonly authorize: (x: Exchange, model: string) => Tenant | Promise<Tenant>;
  /** The budgets the config in use names (its keys', its JWT tenants' default and overrides). */
  rateLimits(): RateLimitSpec[];
  stop(): void;
}

/** The budgets an auth config names. */
export function authBudgets(config: AuthConfig): RateLimitSpec[] {
  const out: RateLimitSpec[] = [];
  for (const k of config.apiKeys) if (k.rateLimit !== null) out.push(k.rateLimit);
  const jwt = config.jwt;
  if (jwt !== null) {
    if (jwt.rateLimit !== null) out.push(jwt.rateLimit);
    for (const l of jwt.tenantLimits.values()) out.push(l);
  }
  return out;
}

/**
 * The WorkerAuth fed by the primary, once it sent the config in use; null without an auth file.
 * `warn`: the Authenticator's lines (a remote key set that could not be fetched).
 */
export async function startWorkerAuth(file: string | null, warn: (m: string) => void): Promise<WorkerAuth | null> {
  if (file === null || file === '') return null;
  // Loaded here, not by the worker's module graph: a worker without an auth file does not load
  // the auth modules and jose (docs/internals/performance-changes.md).
  const [{ Authenticator }, { authConfigFromWire }] = await Promise.all([import('../auth/authenticator.js'), import('../auth/auth-config-wire.js')]);
  let auth: Authenticator | null = null;
  let first: (() => void) | null = null;
  const onMessage = (m: unknown): void => {
    const msg = m as PrimaryToWorker | null;
    if (msg === null || typeof msg !== 'object' || msg.t !== 'core:auth') return;
    // A reload's JWKS cache at the same URI carries over (authenticator.ts).
    auth = new Authenticator(authConfigFromWire(msg.config as AuthConfigWire), { log: warn }, auth);
    first?.();
  };
  process.on('message', onMessage);
  await new Promise<void>((resolve) => {
    first = resolve;
    process.send!({ t: 'core:auth-wanted' });
  });
  first = null;
  return {
    authorize: (x, model) => auth!.identify(x.authorization, model),
    rateLimits: () => authBudgets(auth!.config),
    stop: () => process.off('message', onMessage),
  };
}
