/**
 * A ModelRoute's `regex` match (modelMatch.headers.*.regex, modelMatch.uri.regex) as the route
 * API's reference router reads it: Go RE2 syntax, found anywhere in the value (`^…$` to match the
 * whole value). JavaScript reads RE2's syntax alike but for a few forms, translated here: flags of
 * the whole pattern (`(?i)`, also after `^`, and `(?i:…)` spanning it), named groups `(?P<name>…)`,
 * `\A`, `\z`, `\Q…\E` and POSIX classes (`[[:digit:]]`, `[[:^digit:]]`), which JavaScript would
 * refuse or, worse, read as other characters.
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
  const { flags, body } = leadingFlags(pattern);
  return new RegExp(translate(body), flags);
}

/**
 * Flags that hold for the whole pattern, as JavaScript's flags: a flag group first (`(?i)rest`),
 * or after anchors alone (`^(?i)rest`: an anchor has no case), or a scoped one that spans the
 * whole pattern (`(?i:rest)`, `^(?i:rest)$`). Anywhere else a flag group is refused (translate).
 */
function leadingFlags(pattern: string): { flags: string; body: string } {
  const anchors = /^(?:\^|\\A)*/.exec(pattern)![0];
  const lead = /^\(\?([a-zA-Z]+)([):])/.exec(pattern.slice(anchors.length));
  if (lead === null) return { flags: '', body: pattern };
  let flags = '';
  for (const f of lead[1]) {
    if (!FLAGS.has(f)) throw new Error(`flag ${f} of (?${lead[1]}${lead[2]}${lead[2] === ':' ? '…)' : ''} is not supported (i, m and s are)`);
    if (!flags.includes(f)) flags += f;
  }
  const start = anchors.length + lead[0].length;
  if (lead[2] === ')') return { flags, body: anchors + pattern.slice(start) };
  // Scoped: only when its group closes at the end, but for anchors after it.
  const close = groupEnd(pattern, anchors.length);
  const tail = pattern.slice(close + 1);
  if (close < 0 || !/^(?:\$|\\z)*$/.test(tail)) return { flags: '', body: pattern };
  return { flags, body: `${anchors}(?:${pattern.slice(start, close)})${tail}` };
}

/** Index of the `)` closing the group opened at `i`, or -1 (escapes, classes and \Q…\E skipped). */
function groupEnd(p: string, i: number): number {
  let depth = 0;
  for (let j = i; j < p.length; j++) {
    const ch = p[j];
    if (ch === '\\') {
      if (p[j + 1] === 'Q') {
        const end = p.indexOf('\\E', j + 2);
        if (end === -1) return -1;
        j = end + 1;
      } else j++;
    } else if (ch === '[') j = classEnd(p, j);
    else if (ch === '(') depth++;
    else if (ch === ')' && --depth === 0) return j;
  }
  return -1;
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
          if (ranges === undefined) throw new Error(`[:${name}:] is not supported (unknown POSIX class)`);
          if (name.startsWith('^')) {
            // Negated, alone in its class (`[[:^digit:]]`): the class of the others.
            if (!out.endsWith('[') || p[end + 2] !== ']') throw new Error(`[:${name}:] is supported alone in its class only ([[:${name}:]]): write a negated class`);
            out += `^${ranges}`;
          } else out += ranges;
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

/**
 * The first repetition of a group that itself repeats without bound (`(a+)+`, `(\w*,?)*`,
 * `(?:x+y?){2,}`), as written in `pattern`, or null. On a backtracking engine such a pattern can
 * try exponentially many ways to split a value that almost matches, so one crafted header can hold
 * a worker for seconds; RE2, the route API's engine, runs it in linear time. A heuristic (star
 * height above 1): a nesting that cannot match one string in several ways is reported too.
 */
export function nestedRepetition(pattern: string): string | null {
  /** Per open group: where it starts, and whether an unbounded repetition is inside it. */
  const open: { start: number; unbounded: boolean }[] = [{ start: 0, unbounded: false }];
  /** The group closed just before `i` (a quantifier after it repeats it), or null. */
  let closed: { start: number; unbounded: boolean } | null = null;
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i];
    const q = quantifierAt(pattern, i);
    if (q !== null) {
      if (q.unbounded) {
        if (closed !== null && closed.unbounded) return pattern.slice(closed.start, i + q.length);
        open[open.length - 1].unbounded = true;
      }
      closed = null;
      i += q.length - 1;
      continue;
    }
    closed = null;
    if (ch === '\\') {
      if (pattern[i + 1] === 'Q') {
        const end = pattern.indexOf('\\E', i + 2);
        i = end === -1 ? pattern.length : end + 1;
      } else i++;
    } else if (ch === '[') {
      i = classEnd(pattern, i);
    } else if (ch === '(') {
      open.push({ start: i, unbounded: false });
    } else if (ch === ')' && open.length > 1) {
      closed = open.pop()!;
      if (closed.unbounded) open[open.length - 1].unbounded = true;
    }
  }
  return null;
}

/** The quantifier at `i` (`*`, `+`, `?`, `{n}`, `{n,}`, `{n,m}`, each maybe lazy), or null. */
function quantifierAt(p: string, i: number): { length: number; unbounded: boolean } | null {
  const ch = p[i];
  let length = 0;
  let unbounded = false;
  if (ch === '*' || ch === '+') {
    length = 1;
    unbounded = true;
  } else if (ch === '?') {
    length = 1;
  } else if (ch === '{') {
    const m = /^\{(\d+)(,(\d*))?\}/.exec(p.slice(i, i + 24));
    if (m === null) return null;
    length = m[0].length;
    unbounded = m[2] !== undefined && m[3] === '';
  } else {
    return null;
  }
  if (p[i + length] === '?') length++; // lazy
  return { length, unbounded };
}

/** Index of the `]` closing the class opened at `i` (a `]` first in it is a literal). */
function classEnd(p: string, i: number): number {
  let j = i + 1;
  if (p[j] === '^') j++;
  if (p[j] === ']') j++;
  for (; j < p.length; j++) {
    if (p[j] === '\\') j++;
    else if (p[j] === '[' && p[j + 1] === ':') {
      const end = p.indexOf(':]', j + 2);
      if (end !== -1) j = end + 1;
    } else if (p[j] === ']') return j;
  }
  return p.length;
}
