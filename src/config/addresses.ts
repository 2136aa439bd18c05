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

/**
 * null when `address` is `host:port` or a redis:// / rediss:// URL, or a comma-separated list
 * of those (Redis Cluster seed nodes; whether a list is allowed is decided where it is used).
 */
export function redisAddressProblem(address: string): string | null {
  const parts = address.split(',').map((p) => p.trim());
  for (const part of parts) {
    const problem = redisNodeProblem(part);
    if (problem !== null) return parts.length > 1 ? `in the list of addresses: ${problem}` : problem;
  }
  return null;
}

function redisNodeProblem(address: string): string | null {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(address)) {
    const hp = parseHostPort(address);
    return typeof hp === 'string' ? `${hp}, or a redis:// or rediss:// URL; got ${describe(address)}` : null;
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
  return null;
}

/** Hides a password in `scheme://user:password@host` before it reaches a message. */
function redact(address: string): string {
  return address.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:@/]*:)[^@/]*@/i, '$1***@');
}
