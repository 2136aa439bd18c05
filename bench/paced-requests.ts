/**
 * Requests at a fixed rate, each sent when it is due (a late one at once) and timed from then, so
 * a stall of the server shows in every request it delays, not only in those already sent
 * (bench/auth-reload.ts, bench/metrics-scrape-scale.ts).
 */
import { Agent, request } from 'node:http';
import { percentile } from './order-stats.js';

/** One request: when it was due (performance.now()), its time to the whole answer (-1 until then) and status (0: no answer). */
export interface Probe {
  readonly due: number;
  ms: number;
  status: number;
}

export interface PacedOptions {
  readonly url: string;
  readonly body: string;
  readonly headers: Record<string, string>;
  /** Requests a second. */
  readonly rate: number;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export class PacedRequests {
  readonly probes: Probe[] = [];
  private running = true;
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 32 });
  private readonly pacing: Promise<void>;

  constructor(private readonly opts: PacedOptions) {
    this.pacing = this.pace();
  }

  private async pace(): Promise<void> {
    const every = 1000 / this.opts.rate;
    const start = performance.now();
    let n = 0;
    while (this.running) {
      const due = start + n * every;
      const wait = due - performance.now();
      if (wait > 1) await sleep(wait - 0.5);
      else if (wait > 0) await new Promise((r) => setImmediate(r));
      if (performance.now() < due) continue;
      const p: Probe = { due, ms: -1, status: -1 };
      this.probes.push(p);
      this.send(p);
      n++;
    }
  }

  private send(p: Probe): void {
    const req = request(this.opts.url, { method: 'POST', agent: this.agent, headers: this.opts.headers }, (res) => {
      res.resume();
      res.on('end', () => { p.ms = performance.now() - p.due; p.status = res.statusCode ?? 0; });
    });
    req.on('error', () => { p.ms = performance.now() - p.due; p.status = 0; });
    req.end(this.opts.body);
  }

  /** The times of the requests due in [from, until). */
  timesDue(from: number, until: number): number[] {
    return this.probes.filter((p) => p.due >= from && p.due < until).map((p) => p.ms);
  }

  /** Waits until every request due before `until` has its answer (at most 30 s). */
  async answered(until: number): Promise<void> {
    const give = performance.now() + 30_000;
    while (this.probes.some((p) => p.due < until && p.ms < 0)) {
      if (performance.now() > give) throw new Error('requests were not answered within 30 s');
      await sleep(20);
    }
  }

  /** Answers other than 200 (no answer counted). */
  failed(): number {
    return this.probes.filter((p) => p.status !== 200 && p.status !== -1).length;
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.pacing;
    await sleep(500);
    this.agent.destroy();
  }
}

/** `ms` as count, p50, p99 and max. */
export function describeTimes(ms: readonly number[]): string {
  if (ms.length === 0) return 'no requests';
  const sorted = [...ms].sort((a, b) => a - b);
  return `${ms.length} requests, p50 ${percentile(sorted, 0.5).toFixed(2)} ms, p99 ${percentile(sorted, 0.99).toFixed(2)} ms, max ${sorted[sorted.length - 1].toFixed(2)} ms`;
}

/**
 * Changes made under paced requests (a file rewritten, say), each timed from its write until
 * `applied()` says every worker has it, with the requests due from the write until 200 ms after
 * beside those due in the quiet second before it.
 */
export class ChangeWindows {
  private readonly took: number[] = [];
  private readonly quiet: number[][] = [];
  private readonly during: number[][] = [];

  constructor(private readonly paced: PacedRequests) {}

  async measure(what: string, write: () => void, applied: () => Promise<boolean>): Promise<void> {
    const quietFrom = performance.now();
    await sleep(1000);
    const wrote = performance.now();
    write();
    while (!(await applied())) {
      if (performance.now() - wrote > 60_000) throw new Error(`${what} was not applied by both workers within 60 s`);
      await sleep(5);
    }
    this.took.push(performance.now() - wrote);
    const until = performance.now() + 200;
    await sleep(200);
    await this.paced.answered(until);
    this.quiet.push(this.paced.timesDue(quietFrom, wrote));
    this.during.push(this.paced.timesDue(wrote, until));
  }

  /** The changes as a table (`kind` names its first column), then all windows together. */
  table(kind: string): string {
    let out = `| ${kind} | written until applied in every worker | quiet second before | from the write until 200 ms after applied |\n|---|---|---|---|\n`;
    for (let i = 0; i < this.took.length; i++) out += `| ${i + 1} | ${this.took[i].toFixed(0)} ms | ${describeTimes(this.quiet[i])} | ${describeTimes(this.during[i])} |\n`;
    return `${out}\nall windows: quiet ${describeTimes(this.quiet.flat())}; during the changes ${describeTimes(this.during.flat())}; answers not 200: ${this.paced.failed()}\n`;
  }
}
