/**
 * A reader of the text access-log format exactly as docs/access-log.md describes it, used by
 * the tests to prove lines are parseable: split on spaces, then decode each value.
 */

export function decodeTextValue(v: string): string {
  if (v === '-') return '';
  return v.replace(/\\x([0-9a-f]{2})|\\u([0-9a-f]{4})/g, (_m, x: string | undefined, u: string | undefined) =>
    String.fromCharCode(parseInt((x ?? u) as string, 16)));
}

export interface ParsedTextLine {
  timestamp: string;
  method: string;
  path: string;
  protocol: string;
  status: number;
  error: { type: string; message: string } | null;
  fields: Record<string, string>;
  tokens: string;
  timings: string;
}

const KEYS = ['model_name', 'model_route', 'model_server', 'selected_pod', 'request_id'];

export function parseTextLine(line: string): ParsedTextLine {
  const parts = line.split(' ');
  const ts = /^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)\]$/.exec(parts[0] ?? '');
  if (!ts) throw new Error(`bad timestamp in ${line}`);
  if (!parts[1]?.startsWith('"') || !parts[3]?.endsWith('"')) throw new Error(`bad request line in ${line}`);
  const status = Number(parts[4]);
  if (!Number.isInteger(status)) throw new Error(`bad status in ${line}`);
  let i = 5;
  let error: ParsedTextLine['error'] = null;
  if (parts[i]?.startsWith('error=')) {
    const v = (parts[i] as string).slice('error='.length);
    const colon = v.indexOf(':');
    if (colon < 0) throw new Error(`bad error in ${line}`);
    error = { type: decodeTextValue(v.slice(0, colon)), message: decodeTextValue(v.slice(colon + 1)) };
    i++;
  }
  const fields: Record<string, string> = {};
  for (const key of KEYS) {
    const p = parts[i++] ?? '';
    if (!p.startsWith(key + '=')) throw new Error(`expected ${key}= at ${p} in ${line}`);
    fields[key] = decodeTextValue(p.slice(key.length + 1));
  }
  const tokens = /^tokens=(\d+\/\d+)$/.exec(parts[i++] ?? '');
  const timings = /^timings=(\d+ms\(\d+\+\d+\+\d+\))$/.exec(parts[i++] ?? '');
  if (!tokens || !timings || i !== parts.length) throw new Error(`bad tail in ${line}`);
  return {
    timestamp: ts[1] as string,
    method: decodeTextValue((parts[1] as string).slice(1)),
    path: decodeTextValue(parts[2] as string),
    protocol: decodeTextValue((parts[3] as string).slice(0, -1)),
    status,
    error,
    fields,
    tokens: tokens[1] as string,
    timings: timings[1] as string,
  };
}
