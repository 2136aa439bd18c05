/**
 * Hides the values of credential-like query parameters in a logged path
 * (`/v1/completions?api_key=sk-1&n=2` → `/v1/completions?api_key=[redacted]&n=2`).
 * The request itself is forwarded unchanged; only the access log sees the redacted path.
 */
export const REDACTED = '[redacted]';

/** Parameter names (lower-case, `-` read as `_`) whose values are credentials. */
const SECRET_NAMES = new Set([
  'key', 'apikey', 'api_key', 'x_api_key', 'token', 'access_token', 'refresh_token', 'id_token', 'auth', 'authorization',
  'bearer', 'jwt', 'password', 'passwd', 'pwd', 'pass', 'secret', 'client_secret', 'signature', 'sig', 'session',
  'sessionid', 'session_id', 'credential', 'credentials', 'private_key', 'x_amz_signature', 'x_amz_security_token',
]);
/** …and names ending like these (`openai_api_key`, `hf_token`, `db_password`). */
const SECRET_SUFFIXES = ['_key', 'apikey', '_token', '_secret', 'password', '_signature'];

export function isSecretParam(rawName: string): boolean {
  let name = rawName;
  if (name.includes('%')) {
    try { name = decodeURIComponent(name); } catch { /* keep it as sent */ }
  }
  name = name.toLowerCase().replaceAll('-', '_');
  if (SECRET_NAMES.has(name)) return true;
  for (const s of SECRET_SUFFIXES) if (name.endsWith(s)) return true;
  return false;
}

/** The path with credential values redacted; the same string when there is nothing to hide. */
export function redactPath(path: string): string {
  const q = path.indexOf('?');
  if (q < 0) return path;
  const params = path.slice(q + 1).split('&');
  let changed = false;
  for (let i = 0; i < params.length; i++) {
    const p = params[i];
    const eq = p.indexOf('=');
    if (eq < 0 || eq === p.length - 1 || !isSecretParam(p.slice(0, eq))) continue;
    params[i] = `${p.slice(0, eq + 1)}${REDACTED}`;
    changed = true;
  }
  return changed ? `${path.slice(0, q + 1)}${params.join('&')}` : path;
}
