/**
 * The answers of a run that were not 2xx, named by the router's own access log (JSON lines): a
 * count per status and error (type and message), or per status for an answer the backend gave.
 * wrk only counts non-2xx answers; this says which they were.
 */
import { readFileSync } from 'node:fs';

/** A record's status and, when the router made the answer, its error object (access-log.md). */
const RECORD = /"status_code":([0-9]{3}),(?:"error":\{"type":"([^"]*)","message":"((?:[^"\\]|\\.)*)"\})?/g;

/** Counts of the non-2xx answers in an access log: `<status> <type>: <message>`, or `<status> from the backend`. */
export function failuresInLog(file: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of readFileSync(file, 'utf8').matchAll(RECORD)) {
    if (m[1][0] === '2') continue;
    const key = m[2] === undefined ? `${m[1]} from the backend` : `${m[1]} ${m[2]}: ${JSON.parse(`"${m[3]}"`) as string}`;
    out.set(key, (out.get(key) ?? 0) + 1);
  }
  return out;
}

/** Adds one log's counts to a total. */
export function addFailures(into: Map<string, number>, more: ReadonlyMap<string, number>): void {
  for (const [k, n] of more) into.set(k, (into.get(k) ?? 0) + n);
}

/** One line for a report's notes: the counts, largest first. */
export function failuresNote(id: string, failures: ReadonlyMap<string, number>): string {
  const parts = [...failures].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${n} × ${k}`);
  return `non-2xx answers (${id}), as its access log names them, over all its runs: ${parts.join('; ')}`;
}
