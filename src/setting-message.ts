/**
 * The one wording of a refused flag or environment setting, whichever part reads it:
 * `NAME: expected WHAT; got "VALUE"`, the value as given and quoted (durationSetting adds why in
 * brackets after it). `WHAT` may hold commas (`local, open or closed`), hence the semicolon.
 */
export function badSetting(name: string, expected: string, raw: string): string {
  return `${name}: expected ${expected}; got ${JSON.stringify(raw)}`;
}

/** The values an enum-like setting takes, as `a or b`, `a, b or c`. */
export function alternatives(values: readonly string[]): string {
  return values.length < 2 ? values.join('') : `${values.slice(0, -1).join(', ')} or ${values[values.length - 1]}`;
}
