/**
 * A ModelRoute's `regex` match (modelMatch.headers.*.regex, modelMatch.uri.regex) as the route
 * API's reference router reads it: Go RE2 syntax, found anywhere in the value (`^…$` to match the
 * whole value). JavaScript reads RE2's syntax alike but for a few forms, translated here: flags at
 * the start (`(?i)`), named groups `(?P<name>…)`, `\A`, `\z`, `\Q…\E` and POSIX classes
 * (`[[:digit:]]`), which JavaScript would refuse or, worse, read as other characters.
 */

/** RE2's POSIX classes inside brackets, as JavaScript class ranges. */
const POSIX_CLASSES: Readonly<Record<string, string>> = {
  alnum: '0-9A-Za-z', alpha: 'A-Za-z', ascii: '\\x00-\\x7F', blank: '\\t ', cntrl: '\\x00-\\x1F\\x7F',
  digit: '0-9', graph: '!-~', lower: 'a-z', print: ' -~', punct: '!-\\/:-@\\[-`{-~', space: '\\t\\n\\v\\f\\r ',
  upper: 'A-Z', word: '0-9A-Za-z_', xdigit: '0-9A-Fa-f',
};

/** RE2 flags that JavaScript has, by the same letter. */
const FLAGS = new Set(['i', 'm', 's']);

/** Throws an Error whose message says what is wrong with the pattern. */
export function routeRegex(pattern: string): RegExp {
  let flags = '';
  let body = pattern;
  const lead = /^\(\?([a-zA-Z]+)\)/.exec(pattern);
  if (lead !== null) {
    for (const f of lead[1]) {
      if (!FLAGS.has(f)) throw new Error(`flag ${f} of (?${lead[1]}) is not supported (i, m and s are)`);
      if (!flags.includes(f)) flags += f;
    }
    body = pattern.slice(lead[0].length);
  }
  return new RegExp(translate(body), flags);
}

function translate(p: string): string {
  let out = '';
  let inClass = false;
  for (let i = 0; i < p.length; i++) {
    const ch = p[i];
    if (ch === '\\') {
      const next = p[i + 1];
      if (next === undefined) return out + ch; // a trailing backslash: RegExp says so
      if (!inClass && next === 'A') out += '(?<![\\s\\S])';
      else if (!inClass && next === 'z') out += '(?![\\s\\S])';
      else if (next === 'Q') {
        const end = p.indexOf('\\E', i + 2);
        const literal = p.slice(i + 2, end === -1 ? p.length : end);
        out += literal.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&');
        i = end === -1 ? p.length : end + 1;
        continue;
      } else if (next === 'p' || next === 'P' || (next === 'x' && p[i + 2] === '{')) {
        throw new Error(`\\${next}${next === 'x' ? '{…}' : '…'} (a Unicode ${next === 'x' ? 'code point' : 'class'}) is not supported`);
      } else out += ch + next;
      i++;
      continue;
    }
    if (inClass) {
      if (ch === '[' && p[i + 1] === ':') {
        const end = p.indexOf(':]', i + 2);
        const name = end === -1 ? null : p.slice(i + 2, end);
        if (name !== null && /^\^?[a-z]+$/.test(name)) {
          const ranges = POSIX_CLASSES[name.replace('^', '')];
          if (ranges === undefined || name.startsWith('^')) throw new Error(`[:${name}:] is not supported (${name.startsWith('^') ? 'write a negated class' : 'unknown POSIX class'})`);
          out += ranges;
          i = end + 1;
          continue;
        }
      }
      if (ch === ']') inClass = false;
      out += ch;
      continue;
    }
    if (ch === '[') {
      inClass = true;
      out += ch;
      // A `]` (or `^]`) first in a class is a literal `]` in RE2.
      if (p[i + 1] === '^') out += p[++i];
      if (p[i + 1] === ']') {
        out += '\\]';
        i++;
      }
      continue;
    }
    if (ch === '(' && p.startsWith('(?P<', i)) {
      out += '(?<';
      i += 3;
      continue;
    }
    if (ch === '(' && /^\(\?[-a-zA-Z]+[:)]/.test(p.slice(i, i + 12))) {
      throw new Error('flags are read at the start of the pattern only, as (?i) before the rest: a flag group inside it is not supported');
    }
    out += ch;
  }
  return out;
}
