import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { total } from '../helpers/metrics-text.js';
import { accessLogRecords, postJson, startLoggedRouter, startMock, unusedPort, waitFor, type LoggedRouter, type MockBackend } from '../helpers/processes.js';
import { KTHENA_LABELS, pdResources, type PdPod } from '../helpers/pd-resources.js';

/** A vLLM ModelServer with pdGroup and kvConnector `connector`, labelled as the route API's manifests are, and its route serving `model`. */
function vllmResources(name: string, model: string, connector: string, pods: PdPod[], extra = ''): string {
  return pdResources(name, model, { engine: 'vLLM', connector, ...KTHENA_LABELS }, pods, extra);
}

const CHAT = { model: 'pd-model', messages: [{ role: 'user', content: 'What is disaggregated serving?' }], max_tokens: 12 };

describe('prefill/decode disaggregation: a prefill pod, then a decode pod of its group (built router, mock vLLM pods)', () => {
  let pods: Record<string, MockBackend>;
  let router: LoggedRouter;

  beforeAll(async () => {
    const names = ['p-a', 'p-b', 'd-a', 'd-b', 'h-p', 'h-d', 'x-d', 'p-bad'];
    const started = await Promise.all(names.map((n) => startMock(n, [
      ...(n === 'h-d' ? [] : ['--pd-role', n.endsWith('-p') || n.startsWith('p-') ? 'prefill' : 'decode']),
      ...(n === 'p-bad' ? ['--fail-rate', '1'] : []),
    ])));
    pods = Object.fromEntries(names.map((n, i) => [n, started[i]]));
    const dead = await unusedPort();
    const resources = vllmResources('nixl-server', 'pd-model', 'nixl', [
      { name: 'p-a', port: pods['p-a'].port, group: 'a', role: 'prefill' },
      { name: 'd-a', port: pods['d-a'].port, group: 'a', role: 'decode' },
      { name: 'p-b', port: pods['p-b'].port, group: 'b', role: 'prefill' },
      { name: 'd-b', port: pods['d-b'].port, group: 'b', role: 'decode' },
      // A group without a prefill pod serves nothing.
      { name: 'x-d', port: pods['x-d'].port, group: 'c', role: 'decode' },
    ]) + vllmResources('http-server', 'http-model', 'http', [
      { name: 'h-p', port: pods['h-p'].port, group: 'h', role: 'prefill' },
      { name: 'h-d', port: pods['h-d'].port, group: 'h', role: 'decode' },
    ]) + vllmResources('half-server', 'half-model', 'nixl', [{ name: 'x-d', port: pods['x-d'].port, group: 'c', role: 'decode' }])
      // A prefill pod nothing listens for: alone in its group, and beside a working group.
      + vllmResources('dead-server', 'dead-model', 'nixl', [
        { name: 'p-dead', port: dead, group: 'z', role: 'prefill' }, { name: 'x-d', port: pods['x-d'].port, group: 'z', role: 'decode' },
      ])
      + vllmResources('retry-server', 'retry-model', 'nixl', [
        { name: 'p-dead', port: dead, group: 'z', role: 'prefill' }, { name: 'x-d', port: pods['x-d'].port, group: 'z', role: 'decode' },
        { name: 'p-a', port: pods['p-a'].port, group: 'a', role: 'prefill' }, { name: 'd-a', port: pods['d-a'].port, group: 'a', role: 'decode' },
      ])
      // A prefill pod that answers 500, with a retry policy: alone, and beside a working group.
      + vllmResources('bad-server', 'bad-model', 'nixl', [
        { name: 'p-bad', port: pods['p-bad'].port, group: 'z', role: 'prefill' }, { name: 'x-d', port: pods['x-d'].port, group: 'z', role: 'decode' },
      ], '  trafficPolicy: { retry: { attempts: 2 } }\n')
      + vllmResources('policy-server', 'policy-model', 'nixl', [
        { name: 'p-bad', port: pods['p-bad'].port, group: 'z', role: 'prefill' }, { name: 'x-d', port: pods['x-d'].port, group: 'z', role: 'decode' },
        { name: 'p-b', port: pods['p-b'].port, group: 'b', role: 'prefill' }, { name: 'd-b', port: pods['d-b'].port, group: 'b', role: 'decode' },
      ], '  trafficPolicy: { retry: { attempts: 2 } }\n');
    router = await startLoggedRouter(resources, { workers: 2 });
  });
  afterAll(async () => {
    await router?.kill();
    await Promise.all(Object.values(pods ?? {}).map((p) => p.kill()));
  });

  const records = () => accessLogRecords(router.logFile);
  const recordOf = (id: string) => waitFor(`the record of ${id}`, () => records().find((r) => r.request_id === id));

  it('nixl, whole answer: the prefill pod gets one token without stream and the remote-decode ask; the decode pod of its group gets its kv_transfer_params and answers the client', async () => {
    const seen = new Set<string>();
    for (let i = 0; i < 12; i++) {
      const r = await postJson(`${router.url}/v1/chat/completions`, CHAT, { 'x-request-id': `nixl-${i}` });
      expect(r.status).toBe(200);
      const body = await r.json() as { choices: { message: { content: string } }[]; usage: { completion_tokens: number }; model: string };
      const decode = r.headers.get('x-mock-pod')!;
      expect(['d-a', 'd-b']).toContain(decode);
      // The decode pod pulled the KV cache of the prefill pod of its own group.
      expect(r.headers.get('x-mock-kv-from')).toBe(decode.replace('d-', 'p-'));
      expect(body.usage.completion_tokens).toBe(12);
      expect(body.choices[0].message.content).toBe('tok '.repeat(12));
      expect(body.model).toBe('served-pd-model');
      seen.add(decode);
    }
    expect(seen.size).toBe(2);
    expect(await pods['x-d'].stats().then((s) => s.requests)).toBe(0);
    const prefill = (await pods['p-a'].stats()).lastBody;
    expect(prefill).toEqual({ model: 'served-pd-model', messages: CHAT.messages, max_tokens: 1, kv_transfer_params: { do_remote_decode: true, do_remote_prefill: false } });
    const decodeBody = (await pods['d-a'].stats()).lastBody;
    expect(decodeBody).toMatchObject({ model: 'served-pd-model', max_tokens: 12, kv_transfer_params: { do_remote_prefill: true, remote_engine_id: 'p-a' } });
    const rec = await recordOf('nixl-0');
    expect(rec).toMatchObject({ status_code: 200, model_server: 'default/nixl-server', output_tokens: 12 });
    expect(rec.prefill_pod).toBe(rec.selected_pod.replace('d-', 'p-'));
  });

  it('nixl, stream: the decode pod streams to the client; the usage chunk the router asked for is removed and counted', async () => {
    const r = await postJson(`${router.url}/v1/chat/completions`, { ...CHAT, stream: true }, { 'x-request-id': 'nixl-stream' });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toContain('text/event-stream');
    const text = await r.text();
    expect(text).toContain('data: [DONE]');
    expect(text).not.toContain('"completion_tokens"');
    expect(text.split('"content":"tok "').length - 1).toBe(12);
    const decode = r.headers.get('x-mock-pod')!;
    expect(r.headers.get('x-mock-kv-from')).toBe(decode.replace('d-', 'p-'));
    expect((await pods[decode].stats()).lastBody).toMatchObject({ stream: true, stream_options: { include_usage: true }, kv_transfer_params: { remote_engine_id: decode.replace('d-', 'p-') } });
    expect((await pods[decode.replace('d-', 'p-')].stats()).lastBody).not.toHaveProperty('stream');
    expect(await recordOf('nixl-stream')).toMatchObject({ status_code: 200, output_tokens: 12, prefill_pod: decode.replace('d-', 'p-'), selected_pod: decode });
  });

  it('http: the prefill request changes as for nixl but asks for no KV transfer; the decode request is the client\'s', async () => {
    const r = await postJson(`${router.url}/v1/completions`, { model: 'http-model', prompt: 'Hello', max_tokens: 5, stream: true }, { 'x-request-id': 'http-1' });
    expect(r.status).toBe(200);
    expect(await r.text()).toContain('data: [DONE]');
    expect(r.headers.get('x-mock-pod')).toBe('h-d');
    expect((await pods['h-p'].stats()).lastBody).toEqual({ model: 'served-http-model', prompt: 'Hello', max_tokens: 1 });
    expect((await pods['h-d'].stats()).lastBody).toEqual({ stream_options: { include_usage: true }, model: 'served-http-model', prompt: 'Hello', max_tokens: 5, stream: true });
    expect(await recordOf('http-1')).toMatchObject({ status_code: 200, output_tokens: 5, prefill_pod: 'h-p', selected_pod: 'h-d' });
  });

  it('a prefill pod that answers 500 is a 502 prefill_failed naming it; nothing goes to a decode pod', async () => {
    const before = (await pods['h-d'].stats()).requests;
    const r = await postJson(`${router.url}/v1/completions`, { model: 'http-model', prompt: 'x' }, { 'x-request-id': 'prefill-500', 'x-mock-status': '500', accept: 'application/json' });
    expect(r.status).toBe(502);
    const body = await r.json() as { error: { code: string; message: string } };
    expect(body.error).toMatchObject({ code: 'prefill_failed', message: 'prefill pod h-p answered 500' });
    expect((await pods['h-d'].stats()).requests).toBe(before);
    expect(await recordOf('prefill-500')).toMatchObject({ status_code: 502, prefill_pod: 'h-p', error: { type: 'upstream_error', message: 'prefill pod h-p answered 500' } });
  });

  it('a prefill pod\'s own refusal (4xx) is the client\'s answer, passed through', async () => {
    const r = await postJson(`${router.url}/v1/completions`, { model: 'http-model', prompt: 'x' }, { 'x-mock-status': '422' });
    expect(r.status).toBe(422);
    expect(r.headers.get('x-mock-pod')).toBe('h-p');
    expect(await r.text()).toContain('answered 422 as asked');
  });

  it('no group with both roles: 503 no_ready_pd_pair; a path that is not completions or chat: 400 disaggregation_unsupported', async () => {
    const none = await postJson(`${router.url}/v1/completions`, { model: 'half-model', prompt: 'x' }, { accept: 'application/json' });
    expect(none.status).toBe(503);
    expect((await none.json() as { error: { code: string; message: string } }).error)
      .toEqual(expect.objectContaining({ code: 'no_ready_pd_pair', message: 'no group of ModelServer default/half-server has a ready prefill pod and a ready decode pod' }));
    const emb = await postJson(`${router.url}/v1/embeddings`, { model: 'pd-model', input: 'x' }, { accept: 'application/json' });
    expect(emb.status).toBe(400);
    expect((await emb.json() as { error: { code: string } }).error.code).toBe('disaggregation_unsupported');
  });

  it('a prefill pod that cannot be connected to: 502 upstream_unreachable naming it when no other pair is left; another pair answers when one is', async () => {
    const r = await postJson(`${router.url}/v1/completions`, { model: 'dead-model', prompt: 'x' }, { 'x-request-id': 'dead-1', accept: 'application/json' });
    expect(r.status).toBe(502);
    const error = (await r.json() as { error: { code: string; message: string } }).error;
    expect(error.code).toBe('upstream_unreachable');
    expect(error.message).toMatch(/^cannot connect to prefill pod p-dead: ECONNREFUSED/);
    expect(await recordOf('dead-1')).toMatchObject({ status_code: 502, prefill_pod: 'p-dead', selected_pod: 'x-d' });
    // The decode pod of the dead prefill's group is picked about half the time: its request moves to the other group.
    for (let i = 0; i < 8; i++) {
      const ok = await postJson(`${router.url}/v1/completions`, { model: 'retry-model', prompt: 'x' }, { 'x-request-id': `retry-${i}` });
      expect(ok.status).toBe(200);
      expect(ok.headers.get('x-mock-pod')).toBe('d-a');
      expect(ok.headers.get('x-mock-kv-from')).toBe('p-a');
      await ok.text();
    }
    expect(await pods['x-d'].stats().then((st) => st.requests)).toBe(0);
  });

  it('with trafficPolicy.retry, a prefill pod that answers 500 leaves the request for another pair; none left: 502 prefill_failed naming it', async () => {
    const r = await postJson(`${router.url}/v1/completions`, { model: 'bad-model', prompt: 'x' }, { 'x-request-id': 'bad-1', accept: 'application/json' });
    expect(r.status).toBe(502);
    expect((await r.json() as { error: { code: string; message: string } }).error).toEqual(expect.objectContaining({ code: 'prefill_failed', message: 'prefill pod p-bad answered 500' }));
    expect(await recordOf('bad-1')).toMatchObject({ status_code: 502, prefill_pod: 'p-bad' });
    for (let i = 0; i < 8; i++) {
      const ok = await postJson(`${router.url}/v1/chat/completions`, { ...CHAT, model: 'policy-model', stream: i % 2 === 0 });
      expect(ok.status).toBe(200);
      expect(ok.headers.get('x-mock-pod')).toBe('d-b');
      expect(ok.headers.get('x-mock-kv-from')).toBe('p-b');
      await ok.text();
    }
    expect(await pods['x-d'].stats().then((st) => st.requests)).toBe(0);
  });

  it('a client that leaves during the prefill: the prefill request is cut, nothing goes to the decode pod, the record says 499 with the prefill pod', async () => {
    const before = (await pods['h-d'].stats()).requests;
    const ac = new AbortController();
    const gone = fetch(`${router.url}/v1/completions`, {
      method: 'POST', signal: ac.signal, body: JSON.stringify({ model: 'http-model', prompt: 'x' }),
      headers: { 'content-type': 'application/json', 'x-request-id': 'gone-1', 'x-mock-latency-ms': '60000' },
    });
    void gone.catch(() => undefined);
    await waitFor('the prefill pod to have it', async () => (await pods['h-p'].stats()).lastHeaders?.['x-request-id'] === 'gone-1');
    ac.abort();
    expect(await recordOf('gone-1')).toMatchObject({ status_code: 499, prefill_pod: 'h-p', error: { type: 'client_closed' } });
    expect((await pods['h-d'].stats()).requests).toBe(before);
    await waitFor('no request left in flight at the prefill pod', async () => {
      const text = await (await fetch(`${router.url}/metrics`)).text();
      return text.includes('backend_pod="h-p"') && total(text, 'inference_router_upstream_inflight_requests', 'backend_pod="h-p"') === 0;
    });
  });
});
