/**
 * What is known of one pod's load beyond this worker's own in-flight count: the values scraped
 * from its /metrics by the primary and the other workers' in-flight requests, shared over IPC
 * (pick/pod-load-share.ts), and the latency this worker observed. NaN = unknown.
 */
export class PodLoad {
  /** Requests waiting in the pod's own queue. */
  waiting = NaN;
  /** Requests running on the pod. */
  running = NaN;
  /** KV-cache use, 0..1. */
  kvUsage = NaN;
  /** Mean time to first token over the last scrape interval, ms. */
  ttftMs = NaN;
  /** Mean time per output token over the last scrape interval, ms. */
  tpotMs = NaN;
  /** Clock ms after which the scraped values above count as unknown. */
  scrapedUntil = 0;
  /** Whether the primary scrapes the pod's /metrics (its ModelServer's engine is known), fresh or not, as last shared. */
  scraped = false;
  /** Requests in flight to this pod from the other workers of the instance (as last shared). */
  otherInflight = 0;
  /** Clock ms after which otherInflight counts as 0. */
  sharedUntil = 0;
  /** Moving average of the latency this worker saw from the pod (first byte of a stream, whole answer otherwise), ms. */
  observedMs = NaN;
  /** Scratch of the scheduler during one pick: prompt blocks this pod last served. */
  prefixMatch = 0;
}
