/** Small helpers for validation messages of configuration values. */

/** How a value reads in "expected ..., got ..." messages. */
export function describe(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 80 ? `${v.slice(0, 77)}...` : v)}`;
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  if (Array.isArray(v)) return 'a list';
  if (v instanceof Date) return `the timestamp ${v.toISOString()}`;
  return typeof v === 'object' ? 'a mapping' : typeof v;
}

/** A value in a message: a string quoted as written, anything else as describe() tells it. */
export function quoted(v: unknown): string {
  return typeof v === 'string' ? JSON.stringify(v) : describe(v);
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);
}
