/**
 * Streaming latency probe: one request at a time on a keep-alive connection, alternating between
 * targets (A B A B…), measuring time to first byte of the body and time to the last byte.
 */
import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { percentile } from './order-stats.js';

export interface ProbeTarget { readonly id: string; readonly url: string; readonly body: string }

export interface ProbeResult {
  readonly id: string;
  readonly samples: number;
  readonly ttfbMs: { readonly p50: number; readonly p99: number };
  readonly lastByteMs: { readonly p50: number; readonly p99: number };
  /** SSE events seen per answer (last sample). */
  readonly events: number;
}

function once(agent: Agent, t: ProbeTarget): Promise<{ ttfb: number; last: number; events: number }> {
  return new Promise((resolve, reject) => {
    const u = new URL(t.url);
    const data = Buffer.from(t.body);
    const t0 = performance.now();
    let ttfb = -1;
    let text = '';
    const req = request({
      host: u.hostname, port: u.port, path: u.pathname, method: 'POST', agent,
      headers: { 'content-type': 'application/json', 'content-length': String(data.length) },
    }, (res) => {
      if (res.statusCode !== 200) reject(new Error(`${t.id}: status ${res.statusCode}`));
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        if (ttfb < 0) ttfb = performance.now() - t0;
        text += d;
      });
      res.on('end', () => resolve({ ttfb, last: performance.now() - t0, events: text.split('\n\n').filter((e) => e.startsWith('data:')).length }));
    });
    req.on('error', reject);
    req.end(data);
  });
}

export async function probeStreams(targets: readonly ProbeTarget[], samples: number): Promise<ProbeResult[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const acc = targets.map(() => ({ ttfb: [] as number[], last: [] as number[], events: 0 }));
  for (let i = 0; i < 20; i++) for (const t of targets) await once(agent, t); // warm-up
  for (let i = 0; i < samples; i++) {
    for (let k = 0; k < targets.length; k++) {
      const r = await once(agent, targets[k]);
      acc[k].ttfb.push(r.ttfb);
      acc[k].last.push(r.last);
      acc[k].events = r.events;
    }
  }
  agent.destroy();
  return targets.map((t, k) => {
    const ttfb = acc[k].ttfb.sort((a, b) => a - b);
    const last = acc[k].last.sort((a, b) => a - b);
    return { id: t.id, samples, ttfbMs: { p50: percentile(ttfb, 0.5), p99: percentile(ttfb, 0.99) }, lastByteMs: { p50: percentile(last, 0.5), p99: percentile(last, 0.99) }, events: acc[k].events };
  });
}
