/**
 * The Node flags a worker process starts with: the primary's own, plus a fixed size for V8's young
 * generation (each of its two semi-spaces, in MB: `--min-semi-space-size` and
 * `--max-semi-space-size`), unless the operator set either flag (in the command line or in
 * NODE_OPTIONS) or the setting is 0.
 *
 * V8 sizes the young generation from how much of it survives: a router worker's per-request
 * garbage dies young, so at moderate load it stays at 1-2 MB and is collected often (measured at
 * 3,000 req/s: 325-388 collections in a run against 36-45 at 16 MB; docs/configuration.md, "Young
 * generation"). The router used to get a large one by accident, when loading its tokenizer's
 * vocabulary filled the heap at start.
 */
export function workerExecArgv(primaryExecArgv: readonly string[], nodeOptions: string | undefined, semiSpaceMb: number): string[] {
  const own = [...primaryExecArgv];
  if (semiSpaceMb === 0) return own;
  const setByOperator = (s: string): boolean => /--(min|max)[-_]semi[-_]space[-_]size\b/.test(s);
  if (own.some(setByOperator) || setByOperator(nodeOptions ?? '')) return own;
  return [...own, `--min-semi-space-size=${semiSpaceMb}`, `--max-semi-space-size=${semiSpaceMb}`];
}
