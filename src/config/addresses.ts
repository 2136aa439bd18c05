/** Address forms of resources: endpoint `host:port` and the Redis address of a global limit. */
import { isIPv4, isIPv6 } from 'node:net';
import { describe } from './describe-value.js';

const HOSTNAME = /^[A-Za-z0-9_]([-A-Za-z0-9_]*[A-Za-z0-9_])?(\.[A-Za-z0-9_]([-A-Za-z0-9_]*[A-Za-z0-9_])?)*\.?$/;

/**
 * Parses `host:port`. host: IPv4, hostname or bracketed IPv6; the returned host keeps the
 * brackets (like WHATWG URL.hostname), so `http://${host}:${port}` is always a valid origin.
 * Returns a problem string when the form is wrong.
 */
export function parseHostPort(s: string): { host: string; port: number } | string {
  const form = 'expected host:port (IPv4, hostname or [IPv6], port 1-65535)';
  const colon = s.lastIndexOf(':');
  if (colon <= 0) return form;
  const host = s.slice(0, colon);
  const portText = s.slice(colon + 1);
  if (!/^\d{1,5}$/.test(portText) || Number(portText) < 1 || Number(portText) > 65535) {
    return `${form}: bad port ${JSON.stringify(portText)}`;
  }
  if (host.startsWith('[')) {
    if (!host.endsWith(']') || !isIPv6(host.slice(1, -1))) return `${form}: bad IPv6 address ${JSON.stringify(host)}`;
  } else if (host.includes(':')) {
    return `${form}: an IPv6 address must be in brackets, e.g. [::1]:8000`;
  } else if (!isIPv4(host) && (!HOSTNAME.test(host) || host.length > 253 || /^[\d.]+$/.test(host))) {
    return `${form}: bad host ${JSON.stringify(host)}`;
  }
  return { host, port: Number(portText) };
}

/** One Redis node to connect to. `host` has no IPv6 brackets (what net.connect wants). */
export interface RedisNode {
  host: string;
  port: number;
}

/** Where a global limit's Redis is, parsed from `global.redis.address`. */
export interface RedisTarget {
  /** One node; with Redis Cluster, the seed nodes (comma-separated in the address). */
  nodes: RedisNode[];
  /** true when a `rediss://` URL asked for TLS. */
  tls: boolean;
  /** Database number from a URL path (`redis://h:6379/2`); always 0 for Cluster. */
  db: number;
  /** true when a URL carried a user or password; they are ignored (credentials come from the environment). */
  hadCredentials: boolean;
}

const DEFAULT_REDIS_PORT = 6379;

/**
 * null when `address` is `host:port` or a redis:// / rediss:// URL, or, with `cluster`
 * (REDIS_CLUSTER=true), a comma-separated list of those (Redis Cluster seed nodes); else what is wrong.
 */
export function redisAddressProblem(address: string, cluster: boolean): string | null {
  const parts = address.split(',').map((p) => p.trim());
  const target = parseRedisNodes(parts);
  if (typeof target === 'string') return parts.length > 1 ? `in the list of addresses: ${target}` : target;
  return redisTargetProblem(target, cluster);
}

/**
 * What the router cannot connect to in a parsed address, given REDIS_CLUSTER (`cluster`): several
 * nodes without it, a database number above 99, or one other than 0 on a Cluster; null when none.
 * Checked where resources and auth files are validated, so that such an address is refused there.
 */
export function redisTargetProblem(target: RedisTarget, cluster: boolean): string | null {
  if (target.nodes.length > 1 && !cluster) {
    return `names several nodes (Redis Cluster seed nodes); that needs REDIS_CLUSTER=true in the router's environment (one Redis: name only it)`;
  }
  if (target.db > 99) return `database number must be 0-99, got ${target.db}`;
  if (cluster && target.db !== 0) return `Redis Cluster has only database 0 (REDIS_CLUSTER=true), got database ${target.db}`;
  return null;
}

/**
 * The one parser of Redis addresses: each part is `host:port`, `[ipv6]:port`,
 * `redis://host:port[/db]` or `rediss://...`. Returns the target, or the first part's problem.
 */
export function parseRedisNodes(parts: readonly string[]): RedisTarget | string {
  const target: RedisTarget = { nodes: [], tls: false, db: 0, hadCredentials: false };
  for (const part of parts) {
    const problem = parseRedisNode(part, target);
    if (problem !== null) return problem;
  }
  return target;
}

function parseRedisNode(address: string, target: RedisTarget): string | null {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(address)) {
    const hp = parseHostPort(address);
    if (typeof hp === 'string') return `${hp}, or a redis:// or rediss:// URL; got ${describe(address)}`;
    target.nodes.push({ host: stripBrackets(hp.host), port: hp.port });
    return null;
  }
  let url: URL;
  try {
    url = new URL(address);
  } catch {
    return `invalid URL ${describe(redact(address))}`;
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    return `URL scheme must be redis:// or rediss://, got ${JSON.stringify(url.protocol.slice(0, -1))}`;
  }
  if (url.hostname === '') return `URL ${describe(redact(address))} has no host`;
  if (!/^\/?\d*$/.test(url.pathname)) return `URL path must be a database number such as /0, got ${JSON.stringify(url.pathname)}`;
  if (url.protocol === 'rediss:') target.tls = true;
  if (url.username !== '' || url.password !== '') target.hadCredentials = true;
  const path = url.pathname.replace(/^\//, '');
  if (path !== '') target.db = Number(path);
  target.nodes.push({ host: stripBrackets(url.hostname), port: url.port === '' ? DEFAULT_REDIS_PORT : Number(url.port) });
  return null;
}

function stripBrackets(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/** Hides a password in `scheme://user:password@host` before it reaches a message. */
function redact(address: string): string {
  return address.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:@/]*:)[^@/]*@/i, '$1***@');
}
