/** The value of one series (name with its labels, exactly as exposed) in Prometheus text; undefined when absent. */
export function sample(text: string, series: string): number | undefined {
  for (const line of text.split('\n')) if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1));
  return undefined;
}
