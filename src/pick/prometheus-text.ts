/**
 * A small strict reader of the Prometheus text exposition format (version 0.0.4), enough to
 * take a few sample values out of a model server's /metrics. Comment lines (# HELP, # TYPE, other)
 * are skipped; every other non-empty line must be `name[{labels}] value [timestamp]` or the whole
 * text is refused (a pod answering something else is not trusted for any value).
 *
 * Written here rather than taken from npm: the one parser there (parse-prometheus-text-format)
 * has had a single release for years and builds objects for every family, where the scraper needs
 * the sum of a handful of named series.
 */

export class PrometheusTextError extends Error {}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/**
 * Sums the values of every sample whose metric name is in `wanted`, across label sets (a pod
 * may label by model, or by engine). Names not wanted are checked for syntax but not kept.
 * `counts`, when given, gets the number of samples summed per name. Throws PrometheusTextError
 * naming the line on malformed input.
 */
export function sumSamples(text: string, wanted: ReadonlySet<string>, counts?: Map<string, number>): Map<string, number> {
  const out = new Map<string, number>();
  let start = 0;
  let lineNo = 0;
  while (start <= text.length) {
    let end = text.indexOf('\n', start);
    if (end === -1) end = text.length;
    lineNo++;
    const line = text.slice(start, end).replace(/\r$/, '');
    start = end + 1;
    if (line.trim() === '' || line.startsWith('#')) continue;
    const sample = parseSampleLine(line, lineNo);
    if (!wanted.has(sample.name)) continue;
    out.set(sample.name, (out.get(sample.name) ?? 0) + sample.value);
    counts?.set(sample.name, (counts.get(sample.name) ?? 0) + 1);
  }
  return out;
}

/** One sample line: name, optional {labels}, value, optional integer timestamp. */
export function parseSampleLine(line: string, lineNo = 1): { name: string; value: number } {
  const fail = (why: string): never => {
    throw new PrometheusTextError(`line ${lineNo}: ${why}: ${JSON.stringify(line.length > 120 ? `${line.slice(0, 120)}...` : line)}`);
  };
  let i = 0;
  while (i < line.length && line[i] !== '{' && line[i] !== ' ' && line[i] !== '\t') i++;
  const name = line.slice(0, i);
  if (!NAME.test(name)) fail('bad metric name');
  if (line[i] === '{') i = skipLabels(line, i + 1, fail);
  const rest = line.slice(i).trim().split(/[ \t]+/);
  if (rest.length < 1 || rest.length > 2 || rest[0] === '') fail('expected a value and an optional timestamp');
  const value = parseValue(rest[0]);
  if (value === null) fail('bad value');
  if (rest.length === 2 && !/^-?\d+$/.test(rest[1])) fail('bad timestamp');
  return { name, value: value! };
}

/** From just after `{` to just after `}`; labels are `name="value"` separated by commas. */
function skipLabels(line: string, i: number, fail: (why: string) => never): number {
  for (;;) {
    while (line[i] === ' ') i++;
    if (line[i] === '}') return i + 1;
    const eq = line.indexOf('=', i);
    if (eq === -1) fail('bad labels');
    if (!LABEL_NAME.test(line.slice(i, eq).trim())) fail('bad label name');
    i = eq + 1;
    while (line[i] === ' ') i++;
    if (line[i] !== '"') fail('label value must be quoted');
    i++;
    for (;;) {
      if (i >= line.length) fail('unterminated label value');
      const c = line[i];
      if (c === '\\') {
        const n = line[i + 1];
        if (n !== '\\' && n !== '"' && n !== 'n') fail('bad escape in label value');
        i += 2;
      } else if (c === '"') {
        i++;
        break;
      } else {
        i++;
      }
    }
    while (line[i] === ' ') i++;
    if (line[i] === ',') { i++; continue; }
    if (line[i] === '}') return i + 1;
    fail('bad labels');
  }
}

function parseValue(s: string): number | null {
  if (s === 'NaN') return NaN;
  if (s === '+Inf' || s === 'Inf') return Infinity;
  if (s === '-Inf') return -Infinity;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(s)) return null;
  return Number(s);
}
