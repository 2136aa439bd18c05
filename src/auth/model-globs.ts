/**
 * Model name globs of the auth file: `*` matches any run of characters (also none), `?` exactly
 * one; everything else is literal. Compiled once per config: exact names go to a Set, "*" allows
 * all, the rest are matched without allocation.
 */
export interface ModelGlobs {
  readonly all: boolean;
  readonly exact: ReadonlySet<string>;
  readonly patterns: readonly string[];
}

export function compileGlobs(list: readonly string[]): ModelGlobs {
  const exact = new Set<string>();
  const patterns: string[] = [];
  let all = false;
  for (const g of list) {
    if (/^\*+$/.test(g)) all = true;
    else if (g.includes('*') || g.includes('?')) patterns.push(g);
    else exact.add(g);
  }
  return Object.freeze({ all, exact, patterns: Object.freeze(patterns) });
}

export function globsAllow(globs: ModelGlobs, model: string): boolean {
  if (globs.all || globs.exact.has(model)) return true;
  for (const p of globs.patterns) if (globMatch(p, model)) return true;
  return false;
}

/** Iterative wildcard match (linear backtracking on the last `*`), no regex, no allocation. */
export function globMatch(pattern: string, text: string): boolean {
  let p = 0;
  let t = 0;
  let star = -1;
  let mark = 0;
  while (t < text.length) {
    const pc = p < pattern.length ? pattern.charCodeAt(p) : -1;
    if (pc === 42 /* * */) {
      star = p++;
      mark = t;
    } else if (pc === 63 /* ? */ || pc === text.charCodeAt(t)) {
      p++;
      t++;
    } else if (star >= 0) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.length && pattern.charCodeAt(p) === 42) p++;
  return p === pattern.length;
}
