/** `--name N` from a side benchmark's command line, or `def` when absent. */
export function numberArg(argv: readonly string[], name: string, def: number): number {
  const i = argv.indexOf(name);
  if (i < 0) return def;
  const n = Number(argv[i + 1]);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name}: expected a positive number, got ${JSON.stringify(argv[i + 1])}`);
  return n;
}
