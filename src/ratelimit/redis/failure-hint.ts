/**
 * What an operator can do about a Redis failure, from its message (the client's or Redis's own):
 * appended to the line of the operational log that says the store is unreachable or unavailable.
 * Only for causes the message names for certain; null when it says nothing more.
 */
export function failureHint(reason: string, tls: boolean): string | null {
  if (/^(NOAUTH|WRONGPASS)\b|invalid password|invalid username-password/.test(reason)) {
    return "Redis refused the router's credentials: check REDIS_USERNAME and REDIS_PASSWORD in the router's environment";
  }
  if (/^NOPERM\b|can't run this command/.test(reason)) {
    return 'the Redis user may not run a command the limiter sends or its scripts call: grant those docs/rate-limiting.md lists (The Redis user)';
  }
  if (/^OOM\b/.test(reason)) {
    return 'Redis is at its maxmemory and evicts nothing: raise maxmemory or free memory (keep maxmemory-policy noeviction: an evicting policy drops the limits\' counts)';
  }
  if (/^READONLY\b/.test(reason)) return 'the address names a read-only replica: name the primary';
  if (/^BUSY\b/.test(reason)) return 'Redis is running a long script; it answers again when that ends (SCRIPT KILL ends it)';
  if (/\bECONNREFUSED\b/.test(reason)) return 'nothing listens there: check global.redis.address and that Redis runs';
  if (/\b(ENOTFOUND|EAI_AGAIN)\b/.test(reason)) return 'the host name does not resolve: check global.redis.address';
  if (tls && /\bETIMEDOUT\b/.test(reason)) {
    return 'no TLS connection within the connect timeout: the host did not answer, or the port does not speak TLS ' +
      '(a Redis port without TLS leaves the handshake unanswered; for one, use redis:// and leave REDIS_TLS unset)';
  }
  return null;
}
