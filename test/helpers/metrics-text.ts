/** The value of one series (name with its labels, exactly as exposed) in Prometheus text; undefined when absent. */
export function sample(text: string, series: string): number | undefined {
  for (const line of text.split('\n')) if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1));
  return undefined;
}

/** Sum of every sample of `name` (without suffixes) whose line contains all of `has`. */
export function total(text: string, name: string, ...has: string[]): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (has.every((h) => line.includes(h))) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}
