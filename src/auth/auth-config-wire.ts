/**
 * An AuthConfig as plain JSON, the form the primary sends it to its workers in (node:cluster's IPC
 * serialises messages as JSON): the primary alone reads and parses the auth file, and each worker
 * takes the parsed config as it is. A parse costs a process about 0.7 s of CPU per MiB of YAML;
 * taking this form back costs a worker a few milliseconds per thousand keys.
 */
import type { ApiKeyEntry, AuthConfig, JwtConfig } from './auth-config.js';
import { compileGlobs, type ModelGlobs } from './model-globs.js';
import type { RateLimitSpec } from '../config/resource-types.js';
import { deepFreeze } from '../config/deep-freeze.js';

/** ModelGlobs with its Set as a list. */
interface GlobsWire {
  readonly all: boolean;
  readonly exact: readonly string[];
  readonly patterns: readonly string[];
}

interface ApiKeyWire {
  readonly name: string;
  readonly sha256: string;
  readonly models: GlobsWire | null;
  readonly rateLimit: RateLimitSpec | null;
}

/** JwtConfig with its tenant limits as a list of pairs. */
type JwtWire = Omit<JwtConfig, 'tenantLimits'> & { readonly tenantLimits: readonly (readonly [string, RateLimitSpec])[] };

export interface AuthConfigWire {
  readonly file: string;
  readonly apiKeys: readonly ApiKeyWire[];
  readonly jwt: JwtWire | null;
}

export function authConfigToWire(config: AuthConfig): AuthConfigWire {
  return {
    file: config.file,
    apiKeys: config.apiKeys.map((k) => ({ name: k.name, sha256: k.sha256, models: k.models === null ? null : globsToWire(k.models), rateLimit: k.rateLimit })),
    jwt: config.jwt === null ? null : { ...config.jwt, tenantLimits: [...config.jwt.tenantLimits] },
  };
}

/** The AuthConfig a wire form stands for, frozen as parseAuthConfig's. */
export function authConfigFromWire(wire: AuthConfigWire): AuthConfig {
  const apiKeys: ApiKeyEntry[] = wire.apiKeys.map((k) => ({ name: k.name, sha256: k.sha256, models: k.models === null ? null : globsFromWire(k.models), rateLimit: k.rateLimit }));
  const jwt: JwtConfig | null = wire.jwt === null ? null : { ...wire.jwt, tenantLimits: new Map(wire.jwt.tenantLimits) };
  return deepFreeze({ file: wire.file, apiKeys, jwt });
}

function globsToWire(g: ModelGlobs): GlobsWire {
  return { all: g.all, exact: [...g.exact], patterns: g.patterns };
}

/** Compiled again from its parts: the same globs (a `*` alone stands for every model). */
function globsFromWire(g: GlobsWire): ModelGlobs {
  return compileGlobs(g.all ? ['*', ...g.exact, ...g.patterns] : [...g.exact, ...g.patterns]);
}
