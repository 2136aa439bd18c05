/**
 * The likely intended name for a misspelt one (`ModelSrver`, `modelserver`, `trafficPolcy`,
 * `--prot`): the candidate equal to it ignoring case, or within two single-character edits of it
 * (a letter added, dropped or changed, or two neighbours swapped); null when none is that close or
 * two are equally close.
 */
export function nearName(word: string, candidates: readonly string[]): string | null {
  const w = word.toLowerCase();
  let best: string | null = null;
  let bestDistance = 3;
  let tie = false;
  for (const c of candidates) {
    const d = editDistance(w, c.toLowerCase(), bestDistance + 1); // exact up to bestDistance, to see ties
    if (d < bestDistance) {
      best = c;
      bestDistance = d;
      tie = false;
    } else if (d === bestDistance) {
      tie = true;
    }
  }
  return tie || best === word ? null : best;
}

/**
 * Edit distance of a and b counting a swap of two neighbouring characters as one edit (optimal
 * string alignment: `prot` is one edit from `port`, not two), or `cap` when it is at least that.
 */
function editDistance(a: string, b: string, cap: number): number {
  if (Math.abs(a.length - b.length) >= cap) return cap;
  let before: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  let prevMin = 0;
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      let v = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, before[j - 2] + 1);
      row.push(v);
      if (v < rowMin) rowMin = v;
    }
    // A swap reaches back two rows, so a row's minimum bounds the distance only once the next row's is known too.
    if (rowMin >= cap && prevMin >= cap) return cap;
    before = prev;
    prev = row;
    prevMin = rowMin;
  }
  return Math.min(prev[b.length], cap);
}
