import { existsSync, readFileSync, renameSync, symlinkSync, unlinkSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postJson, resourcesFor, startLoggedRouter, startMock, startRouter, tempDir, type MockBackend, unusedPort, waitFor } from '../helpers/processes.js';

const FIELDS = ['timestamp', 'method', 'path', 'protocol', 'status_code', 'model_name', 'model_route', 'model_server', 'selected_pod',
  'request_id', 'input_tokens', 'output_tokens', 'duration_total', 'duration_request_processing', 'duration_upstream_processing',
  'duration_response_processing'];

function lines(text: string): string[] {
  return text.split('\n').filter((l) => l.length > 0);
}

function records(file: string): any[] {
  return existsSync(file) ? lines(readFileSync(file, 'utf8')).map((l) => JSON.parse(l)) : [];
}

describe('access log over the built router (2 workers)', () => {
  let mock: MockBackend;
  let deadPort: number;
  beforeAll(async () => {
    mock = await startMock('pod-a');
    deadPort = await unusedPort();
  });
  afterAll(async () => {
    await mock?.kill();
  });

  function resources(): string {
    return resourcesFor([{ name: 'pod-a', port: mock.port }], {
      timeout: '400ms',
      rateLimit: '    inputTokensPerUnit: 9\n    unit: day',
      extraRoutes: `---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelServer
metadata: { name: dead, namespace: default }
spec: { endpoints: [{ name: dead-1, address: "127.0.0.1:${deadPort}" }] }
---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelServer
metadata: { name: none, namespace: default }
spec: {}
---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelRoute
metadata: { name: dead-route, namespace: default }
spec: { modelName: dead-model, rules: [{ name: r, targetModels: [{ modelServerName: dead }] }] }
---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelRoute
metadata: { name: none-route, namespace: default }
spec: { modelName: none-model, rules: [{ name: r, targetModels: [{ modelServerName: none }] }] }
`,
    });
  }

  it('json to a file: one record per request for every outcome, exact fields in order', async () => {
    const router = await startLoggedRouter(resources(), { workers: 2 });
    const file = router.logFile;
    try {
      const u = `${router.url}/v1/completions`;
      const sent: { id: string; expect: [number, string | null] }[] = [];
      const send = async (id: string, body: unknown, status: number, type: string | null, path = u, headers: Record<string, string> = {}) => {
        const r = await postJson(path, body, { 'x-request-id': id, ...headers });
        await r.text();
        expect(r.status, id).toBe(status);
        sent.push({ id, expect: [status, type] });
      };
      await send('ok-1', { model: 'sf-model', prompt: 'San Francisco is a' }, 200, null, `${u}?a=1&b=two`);
      await send('bad-json', '{', 400, 'invalid_request');
      await send('unknown', { model: 'nope', prompt: 'x' }, 404, 'model_not_found');
      await send('ok-2', { model: 'sf-model', prompt: 'x' }, 200, null);
      // A client's id that JSON must escape, and a request without an id (the router makes one).
      await send('quote"back\\slash', { model: 'sf-model', prompt: 'x' }, 200, null);
      const unnamed = await postJson(u, { model: 'sf-model', prompt: 'x' });
      await unnamed.text();
      const madeId = unnamed.headers.get('x-request-id') ?? '';
      expect(madeId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      sent.push({ id: madeId, expect: [200, null] });
      await send('limited', { model: 'sf-model', prompt: 'San Francisco is a' }, 429, 'rate_limit');
      await send('dead', { model: 'dead-model', prompt: 'x' }, 502, 'upstream_error');
      await send('none', { model: 'none-model', prompt: 'x' }, 503, 'upstream_error');
      await send('upstream-500', { model: 'dead-model' }, 400, 'invalid_request'); // no prompt
      // Client that goes away before the answer: 499.
      const ac = new AbortController();
      const gone = postJson(u, { model: 'dead-model', prompt: 'x' }, { 'x-request-id': 'gone' });
      void gone.catch(() => undefined);
      const slow = fetch(u, { method: 'POST', signal: ac.signal, headers: { 'content-type': 'application/json', 'x-request-id': 'client-gone', 'x-mock-latency-ms': '300' }, body: JSON.stringify({ model: 'sf-model', prompt: 'x' }) });
      setTimeout(() => ac.abort(), 100);
      await slow.catch(() => undefined);
      await gone.catch(() => undefined);
      await waitFor('records', () => records(file).length >= sent.length + 2, 5000);
      const recs = records(file);
      for (const s of sent) {
        const rec = recs.filter((r) => r.request_id === s.id);
        expect(rec, s.id).toHaveLength(1);
        const [status, type] = s.expect;
        expect(rec[0].status_code).toBe(status);
        const keys = Object.keys(rec[0]);
        if (type === null) {
          expect(keys).toEqual(FIELDS);
        } else {
          expect(keys).toEqual([...FIELDS.slice(0, 5), 'error', ...FIELDS.slice(5)]);
          expect(rec[0].error.type).toBe(type);
          expect(rec[0].error.message.length).toBeGreaterThan(0);
        }
      }
      const ok = recs.find((r) => r.request_id === 'ok-1');
      expect(ok).toMatchObject({
        method: 'POST', path: '/v1/completions?a=1&b=two', protocol: 'HTTP/1.1', model_name: 'sf-model',
        model_route: 'default/sf-route', model_server: 'default/sf-server', selected_pod: 'pod-a', input_tokens: 5, output_tokens: 16,
      });
      expect(ok.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      for (const k of FIELDS.filter((f) => f.startsWith('duration_'))) expect(Number.isInteger(ok[k])).toBe(true);
      expect(recs.find((r) => r.request_id === 'limited').error.message).toBe('input token rate limit exceeded');
      expect(recs.find((r) => r.request_id === 'unknown')).toMatchObject({ model_name: 'nope', model_route: '', selected_pod: '' });
      const goneRec = recs.find((r) => r.request_id === 'client-gone');
      expect(goneRec.status_code).toBe(499);
      expect(goneRec.error.type).toBe('client_closed');
    } finally {
      await router.kill();
    }
  });

  it('records the inference API only: no record for probes, /metrics, the model list or paths outside /v1/', async () => {
    const router = await startLoggedRouter(resources());
    const file = router.logFile;
    try {
      const calls: [string, string][] = [['GET', '/healthz'], ['GET', '/readyz'], ['GET', '/metrics'], ['GET', '/v1/models'], ['GET', '/v1/models/nope'],
        ['DELETE', '/v1/models'], ['GET', '/elsewhere'], ['GET', '/v1/completions'], ['POST', '/v1/nothing-here']];
      for (const [method, path] of calls) await (await fetch(`${router.url}${path}`, { method })).text();
      await router.kill();
      expect(records(file).map((r) => `${r.method} ${r.path}`)).toEqual(['GET /v1/completions', 'POST /v1/nothing-here']);
    } finally {
      await router.kill();
    }
  });

  it('a client that leaves mid-stream cancels the upstream stream at once (499 recorded long before the stream would end)', async () => {
    const slow = await startMock('pod-slow', ['--tokens-per-second', '20']);
    const router = await startLoggedRouter(resourcesFor([{ name: 'pod-slow', port: slow.port }]), { workers: 2 });
    const file = router.logFile;
    try {
      const ac = new AbortController();
      // 400 tokens at 20 a second would take 20 s; the client leaves after the first chunk.
      const r = await fetch(`${router.url}/v1/completions`, {
        method: 'POST', signal: ac.signal,
        headers: { 'content-type': 'application/json', 'x-request-id': 'leaves', 'x-mock-output-tokens': '400' },
        body: JSON.stringify({ model: 'sf-model', prompt: 'x', stream: true }),
      });
      const reader = r.body!.getReader();
      await reader.read();
      ac.abort();
      await waitFor('the 499 record', () => records(file).some((x) => x.request_id === 'leaves'), 5000);
      const rec = records(file).find((x) => x.request_id === 'leaves');
      expect(rec.status_code).toBe(499);
      expect(rec.error.type).toBe('client_closed');
      expect((await fetch(`${router.url}/healthz`)).status).toBe(200);
    } finally {
      await router.kill();
      await slow.kill();
    }
  });

  it('504 timeout record: message and output_tokens 0', async () => {
    const router = await startLoggedRouter(resources(), { workers: 2 });
    const file = router.logFile;
    try {
      const r = await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'x' }, { 'x-mock-latency-ms': '2000', 'x-request-id': 'slow' });
      expect(r.status).toBe(504);
      await waitFor('record', () => records(file).length === 1, 5000);
      const rec = records(file)[0];
      expect(rec.error).toEqual({ type: 'timeout', message: 'inference timed out after 0.4s' });
      expect(rec.output_tokens).toBe(0);
      expect(rec.duration_upstream_processing).toBeGreaterThanOrEqual(390);
    } finally {
      await router.kill();
    }
  });

  it('text to stdout, stderr and a file, one line per record, escaped values', async () => {
    for (const output of ['stdout', 'stderr', 'file'] as const) {
      const dir = tempDir();
      const file = join(dir, 'access.log');
      const router = await startRouter(resources(), { dir, env: { ACCESS_LOG_ENABLED: 'true', ACCESS_LOG_OUTPUT: output === 'file' ? file : output } });
      try {
        await (await postJson(`${router.url}/v1/completions?q=1`, { model: 'sf-model', prompt: 'x' }, { 'x-request-id': 'text-ok' })).text();
        await (await postJson(`${router.url}/v1/completions`, { model: 'evil\nmodel_name=forged', prompt: 'x' }, { 'x-request-id': 'text-evil' })).text();
        const read = output === 'stdout' ? router.stdout : output === 'stderr' ? router.stderr : () => (existsSync(file) ? readFileSync(file, 'utf8') : '');
        await waitFor('two records', () => lines(read()).filter((l) => /^\[\d{4}-/.test(l)).length >= 2, 5000);
        // Two workers write independently: find each record by its request id.
        const all = lines(read()).filter((l) => /^\[\d{4}-/.test(l));
        const recs = [all.find((l) => l.includes('request_id=text-ok'))!, all.find((l) => l.includes('request_id=text-evil'))!];
        expect(all).toHaveLength(2);
        expect(recs[0]).toMatch(/^\[\d{4}-\d\d-\d\dT[\d:.]+Z\] "POST \/v1\/completions\?q=1 HTTP\/1\.1" 200 model_name=sf-model model_route=default\/sf-route model_server=default\/sf-server selected_pod=pod-a request_id=text-ok tokens=\d+\/16 timings=\d+ms\(\d+\+\d+\+\d+\)$/);
        expect(recs[1]).toMatch(/^\[[^\]]+\] "POST \/v1\/completions HTTP\/1\.1" 404 error=model_not_found:\S+ model_name=\S+ model_route=- model_server=- selected_pod=- request_id=text-evil tokens=\d+\/0 timings=/);
        expect(recs[1].match(/ model_name=/g)).toHaveLength(1);
      } finally {
        await router.kill();
      }
    }
  });

  it('ACCESS_LOG_ENABLED=false writes nothing', async () => {
    const router = await startRouter(resources(), { env: { ACCESS_LOG_ENABLED: 'false' } });
    try {
      await (await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'x' })).text();
      await new Promise((r) => setTimeout(r, 200));
      expect(router.stdout()).toBe('');
    } finally {
      await router.kill();
    }
  });

  it('SIGHUP reopens the file (logrotate)', async () => {
    const router = await startLoggedRouter(resources(), { workers: 2 });
    const file = router.logFile;
    try {
      await (await postJson(`${router.url}/v1/completions`, { model: 'nope', prompt: 'x' }, { 'x-request-id': 'before' })).text();
      await waitFor('first record', () => records(file).length === 1, 5000);
      renameSync(file, `${file}.1`);
      router.child.kill('SIGHUP');
      await waitFor('new file', () => existsSync(file), 5000);
      await (await postJson(`${router.url}/v1/completions`, { model: 'nope', prompt: 'x' }, { 'x-request-id': 'after' })).text();
      await waitFor('record in the new file', () => records(file).length === 1, 5000);
      expect(records(file)[0].request_id).toBe('after');
      expect(records(`${file}.1`).map((r) => r.request_id)).toEqual(['before']);
    } finally {
      await router.kill();
    }
  });

  /** The sum of inference_router_access_log_dropped_total over the workers, from /metrics. */
  async function droppedRecords(url: string): Promise<number> {
    const text = await (await fetch(`${url}/metrics`, { headers: { connection: 'close' } })).text();
    const m = /^inference_router_access_log_dropped_total (\d+)$/m.exec(text);
    if (m === null) throw new Error(`no dropped counter in /metrics:\n${text}`);
    return Number(m[1]);
  }

  it('a full disk (/dev/full, every write fails ENOSPC): requests answered, every record counted as dropped', async () => {
    const router = await startRouter(resources(), { env: { ACCESS_LOG_ENABLED: 'true', ACCESS_LOG_FORMAT: 'json', ACCESS_LOG_OUTPUT: '/dev/full' } });
    try {
      const n = 40;
      for (let i = 0; i < n; i++) {
        const r = await postJson(`${router.url}/v1/completions`, { model: 'nope', prompt: 'x' }, { connection: 'close' });
        await r.text();
        expect(r.status).toBe(404);
      }
      await waitFor('dropped counter to reach the request count', async () => (await droppedRecords(router.url)) >= n, 10_000);
      expect(await droppedRecords(router.url)).toBe(n);
      expect(router.stderr()).toMatch(/access log: writing to \/dev\/full failed: ENOSPC/);
    } finally {
      await router.kill();
    }
  });

  it('after a full disk, SIGHUP to a writable file writes only new records (no old backlog)', async () => {
    const dir = tempDir();
    const file = join(dir, 'access.log');
    symlinkSync('/dev/full', file);
    const router = await startRouter(resources(), { dir, env: { ACCESS_LOG_ENABLED: 'true', ACCESS_LOG_FORMAT: 'json', ACCESS_LOG_OUTPUT: file } });
    try {
      for (let i = 0; i < 20; i++) {
        await (await postJson(`${router.url}/v1/completions`, { model: 'nope', prompt: 'x' }, { 'x-request-id': `old-${i}`, connection: 'close' })).text();
      }
      await waitFor('old records counted as dropped', async () => (await droppedRecords(router.url)) >= 20, 10_000);
      unlinkSync(file); // the operator frees the path; the reopen creates a regular file
      router.child.kill('SIGHUP');
      await waitFor('new file', () => existsSync(file), 5000);
      await (await postJson(`${router.url}/v1/completions`, { model: 'nope', prompt: 'x' }, { 'x-request-id': 'new' })).text();
      await waitFor('record in the new file', () => records(file).length >= 1, 5000);
      await new Promise((r) => setTimeout(r, 300)); // a backlog, if any, would follow within the flush interval
      expect(records(file).map((r) => r.request_id)).toEqual(['new']);
      expect(await droppedRecords(router.url)).toBe(20);
    } finally {
      await router.kill();
    }
  });

  it('SIGTERM under load: every answered request has its record', async () => {
    const router = await startLoggedRouter(resources().replace(/  rateLimit:\n.*\n.*\n/, ''), { workers: 2 });
    const file = router.logFile;
    const pool = new Pool(router.url, { connections: 32 });
    let answered = 0;
    let stop = false;
    const loops = Array.from({ length: 32 }, async () => {
      while (!stop) {
        try {
          const r = await pool.request({ path: '/v1/completions', method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"sf-model","prompt":"x"}' });
          await r.body.text();
          answered++;
        } catch {
          return;
        }
      }
    });
    await new Promise((r) => setTimeout(r, 700));
    router.child.kill('SIGTERM');
    const code = await router.exited;
    stop = true;
    await Promise.all(loops);
    await pool.close().catch(() => undefined);
    expect(code).toBe(0);
    expect(answered).toBeGreaterThan(50);
    const recs = records(file);
    expect(recs.filter((r) => r.status_code === 200).length).toBeGreaterThanOrEqual(answered);
    expect(recs.length).toBeLessThanOrEqual(answered + 32); // at most the in-flight ones cut by the client stop
  });

  it('SIGTERM: a stream still running when ROUTER_DRAIN_TIMEOUT passes is cut and recorded, and the router exits soon after', async () => {
    // 100 tokens at 10 a second: 10 s, far beyond the 1 s drain timeout.
    const slow = await startMock('pod-slow', ['--tokens-per-second', '10', '--output-tokens', '100']);
    const router = await startLoggedRouter(resourcesFor([{ name: 'pod-slow', port: slow.port }]), { env: { ROUTER_DRAIN_TIMEOUT: '1s' } });
    const file = router.logFile;
    try {
      const r = await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'x', stream: true }, { 'x-request-id': 'outlives-drain' });
      expect(r.status).toBe(200);
      const reader = r.body!.getReader();
      await reader.read();
      const read = (async () => {
        try {
          for (;;) if ((await reader.read()).done) return 'ended';
        } catch {
          return 'cut';
        }
      })();
      const t0 = Date.now();
      router.child.kill('SIGTERM');
      expect(await router.exited).toBe(0);
      expect(Date.now() - t0).toBeLessThan(3000);
      expect(await read).toBe('cut');
      const recs = records(file);
      expect(recs).toHaveLength(1);
      expect(recs[0]).toMatchObject({ request_id: 'outlives-drain', status_code: 200, selected_pod: 'pod-slow' });
      expect(recs[0].error.type).toBe('upstream_error');
      expect(recs[0].error.message).toContain('ROUTER_DRAIN_TIMEOUT');
      expect(router.stderr()).not.toContain('dropped');
    } finally {
      await router.kill();
      await slow.kill();
    }
  });

  it('SIGTERM while a request body is still arriving: the drain waits for it; it is answered and recorded', async () => {
    const router = await startLoggedRouter(resources().replace(/  rateLimit:\n.*\n.*\n/, ''));
    const file = router.logFile;
    try {
      const body = JSON.stringify({ model: 'sf-model', prompt: 'x' });
      const s = connect(router.port, '127.0.0.1');
      let answer = '';
      s.setEncoding('utf8').on('data', (d: string) => { answer += d; });
      const closed = new Promise<void>((resolve) => s.on('close', () => resolve()));
      await new Promise<void>((resolve, reject) => s.once('connect', resolve).once('error', reject));
      s.write(`POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nx-request-id: uploading\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`);
      await new Promise((r) => setTimeout(r, 300));
      router.child.kill('SIGTERM');
      await new Promise((r) => setTimeout(r, 500));
      s.write(body.slice(10));
      await closed;
      expect(await router.exited).toBe(0);
      expect(answer).toMatch(/^HTTP\/1\.1 200 /);
      const recs = records(file);
      expect(recs).toHaveLength(1);
      expect(recs[0]).toMatchObject({ request_id: 'uploading', status_code: 200, selected_pod: 'pod-a' });
    } finally {
      await router.kill();
    }
  });

  it('SIGTERM while a body upload stalls past ROUTER_DRAIN_TIMEOUT: answered 503 router_stopping and recorded before the router exits', async () => {
    // The drain timeout (1 s) is far below the HTTP server's 10 s idle timeout, which would cut the uploads only after the exit.
    const router = await startLoggedRouter(resources().replace(/  rateLimit:\n.*\n.*\n/, ''), { env: { ROUTER_DRAIN_TIMEOUT: '1s' } });
    const file = router.logFile;
    const stall = async (id: string, bodyPart: string): Promise<{ answer: Promise<string> }> => {
      const s = connect(router.port, '127.0.0.1');
      let answer = '';
      s.setEncoding('utf8').on('data', (d: string) => { answer += d; });
      const closed = new Promise<string>((resolve) => s.on('close', () => resolve(answer)));
      s.on('error', () => {});
      await new Promise<void>((resolve, reject) => s.once('connect', resolve).once('error', reject));
      s.write(`POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nx-request-id: ${id}\r\nContent-Length: 1000\r\n\r\n${bodyPart}`);
      return { answer: closed };
    };
    try {
      // One sent part of its body, the other none: neither will send more.
      const part = await stall('stalled-part', '{"model":"sf-model","prompt":"');
      const none = await stall('stalled-none', '');
      await new Promise((r) => setTimeout(r, 300));
      const t0 = Date.now();
      router.child.kill('SIGTERM');
      expect(await router.exited).toBe(0);
      expect(Date.now() - t0).toBeLessThan(4000);
      for (const a of [await part.answer, await none.answer]) {
        expect(a).toMatch(/^HTTP\/1\.1 503 /);
        expect(a.toLowerCase()).toContain('connection: close');
        expect(a).toContain('ROUTER_DRAIN_TIMEOUT (1000 ms) passed while the request body was still arriving');
      }
      const recs = records(file);
      expect(recs.map((r) => r.request_id).sort()).toEqual(['stalled-none', 'stalled-part']);
      for (const r of recs) {
        expect(r).toMatchObject({ status_code: 503, error: { type: 'upstream_error' }, input_tokens: 0 });
        expect(r.error.message).toContain('ROUTER_DRAIN_TIMEOUT');
      }
    } finally {
      await router.kill();
    }
  });

  it('stress: stdout piped, 2 workers, 20k requests: every line parses and the count matches', async () => {
    const router = await startRouter(resources().replace(/  rateLimit:\n.*\n.*\n/, ''), { env: { ACCESS_LOG_ENABLED: 'true', ACCESS_LOG_FORMAT: 'json', ACCESS_LOG_OUTPUT: 'stdout' } });
    const pool = new Pool(router.url, { connections: 64, pipelining: 1 });
    const total = 20_000;
    let next = 0;
    try {
      await Promise.all(Array.from({ length: 64 }, async () => {
        while (next < total) {
          const i = next++;
          const r = await pool.request({
            path: `/v1/completions?i=${i}`, method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': `s-${i}` },
            body: i % 10 === 0 ? '{"model":"nope","prompt":"x"}' : `{"model":"sf-model","prompt":"${'y'.repeat(i % 300)}"}`,
          });
          await r.body.text();
        }
      }));
      await waitFor('all records', () => lines(router.stdout()).length >= total, 20_000);
      const all = lines(router.stdout());
      expect(all.length).toBe(total);
      const ids = new Set<string>();
      for (const l of all) {
        const rec = JSON.parse(l);
        ids.add(rec.request_id);
      }
      expect(ids.size).toBe(total);
    } finally {
      await pool.close();
      await router.kill();
    }
  }, 180_000);
});
