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

const DEFAULT_PORT = 6379;

/**
 * Parses `host:port`, `[ipv6]:port`, `redis://host:port[/db]` or `rediss://...`; with `cluster`,
 * a comma-separated list of those (seed nodes). Throws an Error naming the problem.
 */
export function parseRedisAddress(address: string, cluster: boolean): RedisTarget {
  const parts = address.split(',').map((p) => p.trim()).filter((p) => p !== '');
  if (parts.length === 0) throw new Error(`redis address is empty`);
  if (parts.length > 1 && !cluster) {
    throw new Error(`redis address ${JSON.stringify(address)} names several nodes; that needs REDIS_CLUSTER=true`);
  }
  const target: RedisTarget = { nodes: [], tls: false, db: 0, hadCredentials: false };
  for (const part of parts) {
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(part)) parseUrl(part, target);
    else target.nodes.push(parseHostPort(part));
  }
  if (cluster && target.db !== 0) throw new Error(`redis address ${JSON.stringify(address)}: Redis Cluster has only database 0`);
  return target;
}

function parseUrl(part: string, target: RedisTarget): void {
  let url: URL;
  try {
    url = new URL(part);
  } catch {
    throw new Error(`redis address: invalid URL ${JSON.stringify(part.replace(/\/\/[^@/]*@/, '//***@'))}`);
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    throw new Error(`redis address: URL scheme must be redis:// or rediss://, got ${JSON.stringify(url.protocol)}`);
  }
  if (url.hostname === '') throw new Error(`redis address: URL has no host`);
  if (url.protocol === 'rediss:') target.tls = true;
  if (url.username !== '' || url.password !== '') target.hadCredentials = true;
  const path = url.pathname.replace(/^\//, '');
  if (path !== '') {
    if (!/^\d{1,2}$/.test(path)) throw new Error(`redis address: URL path must be a database number such as /0, got ${JSON.stringify(url.pathname)}`);
    target.db = Number(path);
  }
  const port = url.port === '' ? DEFAULT_PORT : Number(url.port);
  target.nodes.push({ host: stripBrackets(url.hostname), port });
}

function parseHostPort(part: string): RedisNode {
  const colon = part.lastIndexOf(':');
  const close = part.lastIndexOf(']');
  if (colon <= 0 || colon < close) {
    throw new Error(`redis address: expected host:port or a redis:// URL, got ${JSON.stringify(part)}`);
  }
  const host = part.slice(0, colon);
  const portText = part.slice(colon + 1);
  const port = Number(portText);
  if (!/^\d{1,5}$/.test(portText) || port < 1 || port > 65535) {
    throw new Error(`redis address: bad port ${JSON.stringify(portText)} in ${JSON.stringify(part)} (expected 1-65535)`);
  }
  if (!host.startsWith('[') && host.includes(':')) {
    throw new Error(`redis address: an IPv6 address must be in brackets, e.g. [::1]:6379, got ${JSON.stringify(part)}`);
  }
  return { host: stripBrackets(host), port };
}

function stripBrackets(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}
