import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sample } from '../../helpers/metrics-text.js';
import { builtFile } from '../../helpers/built-file.js';
import { serverPort } from '../../helpers/ports.js';

const FIXTURE = new URL('./metrics-cluster-fixture.mjs', import.meta.url).pathname;

function checkBuilt(): void {
  for (const name of ['metrics', 'metrics-cluster', 'metrics-series']) builtFile(`observe/${name}.js`, `src/observe/${name}.ts`);
}

async function scrape(url: string): Promise<string> {
  const r = await fetch(url, { headers: { connection: 'close' } });
  expect(r.status).toBe(200);
  expect(r.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  // The fixture's primary sends every text in parts (textPartChars 512): written out chunked as they come.
  expect(r.headers.get('transfer-encoding')).toBe('chunked');
  return r.text();
}

describe('metrics across node:cluster workers (compiled dist)', () => {
  let child: ChildProcess;
  let out = '';
  let err = '';
  let url = '';

  beforeAll(async () => {
    checkBuilt();
    const port = await serverPort();
    url = `http://127.0.0.1:${port}/metrics`;
    child = spawn(process.execPath, [FIXTURE, String(port)], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.setEncoding('utf8').on('data', (d: string) => { out += d; });
    child.stderr!.setEncoding('utf8').on('data', (d: string) => { err += d; });
    for (let i = 0; i < 1500 && !out.includes('READY'); i++) {
      if (child.exitCode !== null) throw new Error(`fixture exited ${child.exitCode}: ${err}`);
      await new Promise((r) => setTimeout(r, 10));
    }
    if (!out.includes('READY')) throw new Error(`fixture not ready: ${out} ${err}`);
  });
  afterAll(() => {
    child?.kill('SIGTERM');
  });

  it('every worker answers with the sum over both workers', async () => {
    const R = 'route="default/sf-route"';
    for (let i = 0; i < 8; i++) {
      const t = await scrape(url);
      expect(sample(t, `inference_router_requests_total{model="sf-model",${R},status="200",error_type=""}`)).toBe(8);
      expect(sample(t, `inference_router_requests_total{model="sf-model",${R},status="429",error_type="rate_limit"}`)).toBe(1);
      expect(sample(t, 'inference_router_requests_total{model="(unknown)",route="",status="404",error_type="model_not_found"}')).toBe(2);
      expect(sample(t, `inference_router_input_tokens_total{${R}}`)).toBe(90);
      expect(sample(t, `inference_router_request_duration_seconds_count{${R}}`)).toBe(9);
      expect(sample(t, `inference_router_request_duration_seconds_bucket{${R},le="0.1"}`)).toBe(9);
      expect(sample(t, `inference_router_request_duration_seconds_bucket{${R},le="0.05"}`)).toBe(0);
      expect(sample(t, 'inference_router_upstream_inflight_requests{backend_pod="pod-a",pod="pod-a"}')).toBe(3);
      expect(sample(t, 'inference_router_metrics_scrape_workers{state="answered"}')).toBe(2);
      expect(sample(t, 'inference_router_metrics_scrape_workers{state="missing"}')).toBe(0);
    }
    expect(err).toBe('');
  });

  it('a text sent in parts is the whole text: HEAD says its length; a text the primary stops sending is cut, not answered short', async () => {
    const t = await scrape(url);
    expect(t.length).toBeGreaterThan(4 * 512);
    expect(t.endsWith('\n')).toBe(true);
    const head = await fetch(url, { method: 'HEAD', headers: { connection: 'close' } });
    expect(head.status).toBe(200);
    expect(Number(head.headers.get('content-length'))).toBe(Buffer.byteLength(t));
    child.kill('SIGHUP');
    for (let i = 0; i < 500 && !out.includes('CUT'); i++) await new Promise((r) => setTimeout(r, 10));
    expect(out).toContain('CUT');
    // The worker waits 5 s for a next part, then closes the connection: the body never ends.
    const cut = await fetch(url, { headers: { connection: 'close' } });
    expect(cut.status).toBe(200);
    await expect(cut.text()).rejects.toThrow();
    // The next scrape is whole again.
    expect(sample(await scrape(url), 'inference_router_input_tokens_total{route="default/sf-route"}')).toBe(90);
  }, 20_000);

  it('the tenants with their own series are bounded for the instance, not per worker; a tenant named "other" is not the overflow', async () => {
    const t = await scrape(url);
    const input = [...t.matchAll(/^inference_router_tenant_tokens_total\{tenant="([^"]*)",direction="input"\} (\d+)$/gm)].map((m) => ({ tenant: m[1], value: Number(m[2]) }));
    // Every token is in some series: 7 + 149 of worker 1, 60 of worker 2.
    expect(input.reduce((a, r) => a + r.value, 0)).toBe(7 + 149 + 60);
    const overflow = input.filter((r) => r.tenant === '');
    const named = input.filter((r) => r.tenant !== '');
    expect(named.length).toBe(100);
    expect(overflow.length).toBe(1);
    // Worker 1 saw "other" first: its own series, holding its 7 tokens only.
    expect(named.find((r) => r.tenant === 'other')?.value).toBe(7);
    // The same tenants keep their own series in later scrapes.
    const again = await scrape(url);
    for (const r of named) expect(sample(again, `inference_router_tenant_tokens_total{tenant="${r.tenant}",direction="input"}`), r.tenant).toBe(r.value);
  });

  it('workers that answered while the primary was busy past the timeout count as answered, not missing', async () => {
    child.kill('SIGUSR2');
    for (let i = 0; i < 500 && !out.includes('HOLD'); i++) await new Promise((r) => setTimeout(r, 10));
    expect(out).toContain('HOLD');
    const t = await scrape(url);
    expect(sample(t, 'inference_router_metrics_scrape_workers{state="answered"}')).toBe(2);
    expect(sample(t, 'inference_router_metrics_scrape_workers{state="missing"}')).toBe(0);
    expect(sample(t, 'inference_router_input_tokens_total{route="default/sf-route"}')).toBe(90);
  }, 20_000);

  it('a worker that drains hands its final counts to the primary before it exits: what it counted after the last scrape is in the sums', async () => {
    const m = /WORKER 1 (\d+)/.exec(out);
    expect(m).not.toBeNull();
    const before = await scrape(url);
    expect(sample(before, 'inference_router_requests_total{model="sf-model",route="default/sf-route",status="200",error_type=""}')).toBe(8);
    // Worker 1 counts 3 more requests, then drains: no scrape asks it again.
    process.kill(Number(m![1]), 'SIGUSR1');
    for (let i = 0; i < 500 && !/FINAL 1 /.test(out); i++) await new Promise((r) => setTimeout(r, 10));
    expect(out).toMatch(/FINAL 1 true\n/);
    // Its replacement (worker 3, which counted nothing) answers with worker 2.
    let t = '';
    for (let i = 0; i < 500; i++) {
      t = /WORKER 3 \d+/.test(out) ? await scrape(url).catch(() => '') : '';
      if (sample(t, 'inference_router_metrics_scrape_workers{state="answered"}') === 2) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(sample(t, 'inference_router_metrics_scrape_workers{state="answered"}')).toBe(2);
    expect(sample(t, 'inference_router_requests_total{model="sf-model",route="default/sf-route",status="200",error_type=""}')).toBe(11);
    expect(sample(t, 'inference_router_request_duration_seconds_count{route="default/sf-route"}')).toBe(12);
    expect(sample(t, 'inference_router_requests_total{model="(unknown)",route="",status="404",error_type="model_not_found"}')).toBe(2);
  });

  it('a worker that died is settled at once, not after a timeout: its counters stay in the sums, its gauges go', async () => {
    const m = /WORKER 2 (\d+)/.exec(out);
    expect(m).not.toBeNull();
    process.kill(Number(m![1]), 'SIGKILL');
    // Once the primary saw the exit, scrapes ask worker 1 only.
    let t = '';
    for (let i = 0; i < 200; i++) {
      // A connection the kernel still hands to the dead worker's socket is reset: try again.
      t = await scrape(url).catch(() => '');
      if (sample(t, 'inference_router_metrics_scrape_workers{state="answered"}') === 1) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(sample(t, 'inference_router_metrics_scrape_workers{state="answered"}')).toBe(1);
    // Not counted as missing: its exit removed it, no timeout was waited for.
    expect(sample(t, 'inference_router_metrics_scrape_workers{state="missing"}')).toBe(0);
    // Counters do not go down (Prometheus would read a reset): worker 2's, as of its last answer, stay
    // (and worker 1's, as of its final counts).
    expect(sample(t, 'inference_router_requests_total{model="sf-model",route="default/sf-route",status="200",error_type=""}')).toBe(11);
    expect(sample(t, 'inference_router_requests_total{model="(unknown)",route="",status="404",error_type="model_not_found"}')).toBe(2);
    expect(sample(t, 'inference_router_request_duration_seconds_count{route="default/sf-route"}')).toBe(12);
    expect(sample(t, 'inference_router_request_duration_seconds_bucket{route="default/sf-route",le="0.1"}')).toBe(12);
    // A gauge describes the processes there are now (worker 3 alone: its in-flight gauge is 3).
    expect(sample(t, 'inference_router_upstream_inflight_requests{backend_pod="pod-a",pod="pod-a"}')).toBe(3);
  });
});
