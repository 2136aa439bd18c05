/**
 * The likely intended name for a misspelt one (`ModelSrver`, `modelserver`, `trafficPolcy`,
 * `--prot`): the candidate equal to it ignoring case, or within two single-character edits of it
 * (a letter added, dropped or changed, or two neighbours swapped); null when none is that close or
 * two are equally close.
 */
export function nearName(word: string, candidates: readonly string[]): string | null {
  return closest(word, candidates, candidates.map((c) => c.toLowerCase()));
}

/** Most names NearNames compares a word with, one by one; past it only a name equal but for case is found. */
export const NEAR_NAMES_COMPARED = 500;

/**
 * nearName over names fixed in advance (the served model names of a route table), lower-cased once.
 * Up to NEAR_NAMES_COMPARED names it finds what nearName finds; with more, only a name equal to the
 * word but for case: each request naming an unknown model would otherwise cost a comparison with
 * every name (20,000 names: about 9 ms of CPU a request).
 */
export class NearNames {
  private readonly lower: readonly string[];
  /** With more names than compared: each lower-cased name to its name, or to null when several share it. */
  private readonly byLower: Map<string, string | null> | null = null;

  constructor(private readonly names: readonly string[], compared = NEAR_NAMES_COMPARED) {
    this.lower = names.map((n) => n.toLowerCase());
    if (names.length > compared) {
      const byLower = new Map<string, string | null>();
      for (let i = 0; i < names.length; i++) byLower.set(this.lower[i], byLower.has(this.lower[i]) ? null : names[i]);
      this.byLower = byLower;
    }
  }

  near(word: string): string | null {
    if (this.byLower === null) return closest(word, this.names, this.lower);
    const found = this.byLower.get(word.toLowerCase());
    return found === undefined || found === word ? null : found;
  }
}

/** nearName's search: `lower` holds the candidates lower-cased, in their order. */
function closest(word: string, candidates: readonly string[], lower: readonly string[]): string | null {
  const w = word.toLowerCase();
  let best: string | null = null;
  let bestDistance = 3;
  let tie = false;
  for (let i = 0; i < candidates.length; i++) {
    const d = editDistance(w, lower[i], bestDistance + 1); // exact up to bestDistance, to see ties
    if (d < bestDistance) {
      best = candidates[i];
      bestDistance = d;
      tie = false;
    } else if (d === bestDistance) {
      tie = true;
    }
  }
  return tie || best === word ? null : best;
}

/**
 * Three rows of the distance table, used again from one call to the next (grown as needed): the
 * router calls nearName for every request naming a model it does not serve, against every served
 * name, and a row per character allocated per candidate made that cost hundreds of µs with a
 * hundred names (docs/internals/performance-changes.md, "Unknown models: the hint's cost").
 */
let rowA = new Int32Array(64);
let rowB = new Int32Array(64);
let rowC = new Int32Array(64);

/**
 * Edit distance of a and b counting a swap of two neighbouring characters as one edit (optimal
 * string alignment: `prot` is one edit from `port`, not two), or `cap` when it is at least that.
 *
 * What the two share at their start and at their end costs no edit and is passed over first (served
 * names tend to share most of theirs: `org-model-0007-instruct-v2`). Of the rest only the band of
 * cells within cap - 1 of the diagonal is computed: a cell (i, j) is at least |i - j| edits, so
 * every cell outside it is at least cap and is read as cap. A path through one then costs cap or
 * more, and one inside the band its exact cost, so the answer, capped, is exact. A call costs
 * about (2 cap - 1) cells per character that differs, not |a| x |b|.
 */
export function editDistance(a: string, b: string, cap: number): number {
  let m = a.length;
  let n = b.length;
  if (Math.abs(m - n) >= cap) return cap;
  let from = 0;
  while (from < m && from < n && a.charCodeAt(from) === b.charCodeAt(from)) from++;
  while (m > from && n > from && a.charCodeAt(m - 1) === b.charCodeAt(n - 1)) {
    m--;
    n--;
  }
  m -= from;
  n -= from;
  if (m === 0 || n === 0) return m + n < cap ? m + n : cap;
  if (rowA.length <= n + 1) {
    const size = 2 * (n + 2);
    rowA = new Int32Array(size);
    rowB = new Int32Array(size);
    rowC = new Int32Array(size);
  }
  let before = rowA;
  let prev = rowB;
  let row = rowC;
  for (let j = 0; j <= n; j++) prev[j] = j < cap ? j : cap;
  let prevMin = 0;
  for (let i = 1; i <= m; i++) {
    const lo = i - cap + 1 > 1 ? i - cap + 1 : 1;
    const hi = i + cap - 1 < n ? i + cap - 1 : n;
    row[0] = i < cap ? i : cap;
    // The next row reads this one up to hi + 1: past the band, at least cap.
    if (hi + 1 <= n) row[hi + 1] = cap;
    // Below the band (j < lo, from 1): at least cap too; the next row reads lo - 1 at the least.
    if (lo - 1 >= 1) row[lo - 1] = cap;
    let rowMin = row[0];
    const ac = a.charCodeAt(from + i - 1);
    const ap = i > 1 ? a.charCodeAt(from + i - 2) : -1;
    for (let j = lo; j <= hi; j++) {
      const bc = b.charCodeAt(from + j - 1);
      let v = prev[j - 1] + (ac === bc ? 0 : 1);
      if (prev[j] + 1 < v) v = prev[j] + 1;
      if (row[j - 1] + 1 < v) v = row[j - 1] + 1;
      if (j > 1 && ap === bc && ac === b.charCodeAt(from + j - 2) && before[j - 2] + 1 < v) v = before[j - 2] + 1;
      row[j] = v;
      if (v < rowMin) rowMin = v;
    }
    // A swap reaches back two rows, so a row's minimum bounds the distance only once the next row's is known too.
    if (rowMin >= cap && prevMin >= cap) return cap;
    const t = before;
    before = prev;
    prev = row;
    row = t;
    prevMin = rowMin;
  }
  return prev[n] < cap ? prev[n] : cap;
}
