import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { total } from '../helpers/metrics-text.js';
import { accessLogRecords, postJson, startLoggedRouter, startMock, unusedPort, waitFor, type LoggedRouter, type MockBackend } from '../helpers/processes.js';
import { pdResources, type PdPod } from '../helpers/pd-resources.js';

/** An SGLang ModelServer with pdGroup (no kvConnector: the engine chooses SGLang's handoff) whose pods are `pods`, and its route serving `model`. */
function sglangResources(name: string, model: string, pods: PdPod[], extra = ''): string {
  return pdResources(name, model, { engine: 'SGLang', connector: null, groupKey: 'group', roleKey: 'role' }, pods, extra);
}

const CHAT = { model: 'sg-model', messages: [{ role: 'user', content: 'What is disaggregated serving?' }], max_tokens: 12 };

describe('prefill/decode disaggregation of SGLang pods: both requests at once, sharing a bootstrap room (built router, mock SGLang pods)', () => {
  const pods: Record<string, MockBackend> = {};
  let router: LoggedRouter;

  beforeAll(async () => {
    // Prefill pods first: each decode pod joins bootstrap rooms at its prefill pod's port.
    const prefills: [string, string[]][] = [['sp-a', []], ['sp-bad', ['--fail-rate', '1']], ['sp-c', []]];
    const started = await Promise.all(prefills.map(([n, extra]) => startMock(n, ['--pd-role', 'sglang-prefill', ...extra])));
    prefills.forEach(([n], i) => { pods[n] = started[i]; });
    const decodes: [string, string, string[]][] = [['sd-a', 'sp-a', []], ['sd-z', 'sp-bad', []], ['sd-bad', 'sp-c', ['--fail-rate', '1']]];
    const startedDecodes = await Promise.all(decodes.map(([n, of, extra]) =>
      startMock(n, ['--pd-role', 'sglang-decode', '--bootstrap-port', String(pods[of].port), ...extra])));
    decodes.forEach(([n], i) => { pods[n] = startedDecodes[i]; });
    const pod = (name: string, group: string, role: string) => ({ name, port: pods[name].port, group, role });
    const resources = sglangResources('sg-server', 'sg-model', [pod('sp-a', 'a', 'prefill'), pod('sd-a', 'a', 'decode')])
      + sglangResources('bad-server', 'bad-model', [pod('sp-bad', 'z', 'prefill'), pod('sd-z', 'z', 'decode')])
      + sglangResources('policy-server', 'policy-model', [pod('sp-bad', 'z', 'prefill'), pod('sd-z', 'z', 'decode'), pod('sp-a', 'a', 'prefill'), pod('sd-a', 'a', 'decode')],
        '  trafficPolicy: { retry: { attempts: 2 } }\n')
      + sglangResources('decode-bad-server', 'decode-bad-model', [pod('sp-c', 'c', 'prefill'), pod('sd-bad', 'c', 'decode')])
      // A decode pod nothing listens for.
      + sglangResources('decode-dead-server', 'decode-dead-model', [pod('sp-c', 'c', 'prefill'), { name: 'sd-dead', port: await unusedPort(), group: 'c', role: 'decode' }]);
    router = await startLoggedRouter(resources, { workers: 2 });
  });
  afterAll(async () => {
    await router?.kill();
    await Promise.all(Object.values(pods).map((p) => p.kill()));
  });

  const records = () => accessLogRecords(router.logFile);
  const recordOf = (id: string) => waitFor(`the record of ${id}`, () => records().find((r) => r.request_id === id));

  it('whole answer: the prefill pod gets one token without stream and a bootstrap room; the decode pod the client\'s request with the same room and the prefill pod\'s host', async () => {
    const rooms = new Set<number>();
    for (let i = 0; i < 4; i++) {
      const r = await postJson(`${router.url}/v1/chat/completions`, CHAT, { 'x-request-id': `sg-${i}` });
      expect(r.status).toBe(200);
      expect(r.headers.get('x-mock-pod')).toBe('sd-a');
      // The decode pod joined the room at bootstrap_host and found the prefill request of that room there.
      expect(r.headers.get('x-mock-kv-from')).toBe('sp-a');
      const body = await r.json() as { choices: { message: { content: string } }[]; usage: { completion_tokens: number }; model: string };
      expect(body.choices[0].message.content).toBe('tok '.repeat(12));
      expect(body.usage.completion_tokens).toBe(12);
      const prefill = (await pods['sp-a'].stats()).lastBody as Record<string, unknown>;
      const decode = (await pods['sd-a'].stats()).lastBody as Record<string, unknown>;
      expect(prefill).toEqual({ model: 'served-sg-model', messages: CHAT.messages, max_tokens: 1, bootstrap_room: expect.any(Number) });
      expect(decode).toEqual({ model: 'served-sg-model', messages: CHAT.messages, max_tokens: 12, bootstrap_room: prefill.bootstrap_room, bootstrap_host: '127.0.0.1' });
      rooms.add(prefill.bootstrap_room as number);
    }
    // A new room for each request.
    expect(rooms.size).toBe(4);
    expect(await recordOf('sg-0')).toMatchObject({ status_code: 200, model_server: 'default/sg-server', output_tokens: 12, prefill_pod: 'sp-a', selected_pod: 'sd-a' });
  });

  it('stream: the decode pod streams to the client; the usage chunk the router asked for is removed and counted', async () => {
    const r = await postJson(`${router.url}/v1/chat/completions`, { ...CHAT, stream: true }, { 'x-request-id': 'sg-stream' });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toContain('text/event-stream');
    expect(r.headers.get('x-mock-kv-from')).toBe('sp-a');
    const text = await r.text();
    expect(text).toContain('data: [DONE]');
    expect(text).not.toContain('"completion_tokens"');
    expect(text.split('"content":"tok "').length - 1).toBe(12);
    const prefill = (await pods['sp-a'].stats()).lastBody as Record<string, unknown>;
    expect(prefill).not.toHaveProperty('stream');
    expect((await pods['sd-a'].stats()).lastBody).toMatchObject({ stream: true, stream_options: { include_usage: true }, bootstrap_room: prefill.bootstrap_room, bootstrap_host: '127.0.0.1' });
    expect(await recordOf('sg-stream')).toMatchObject({ status_code: 200, output_tokens: 12, prefill_pod: 'sp-a', selected_pod: 'sd-a' });
  });

  it('a prefill pod that answers 500 while its decode waits: the decode is cut, 502 prefill_failed naming it; with a retry policy another pair answers', async () => {
    const r = await postJson(`${router.url}/v1/completions`, { model: 'bad-model', prompt: 'x' }, { 'x-request-id': 'sg-bad', accept: 'application/json' });
    expect(r.status).toBe(502);
    expect((await r.json() as { error: { code: string; message: string } }).error).toEqual(expect.objectContaining({ code: 'prefill_failed', message: 'prefill pod sp-bad answered 500' }));
    expect(await recordOf('sg-bad')).toMatchObject({ status_code: 502, prefill_pod: 'sp-bad', selected_pod: 'sd-z' });
    // The decode request went out with the prefill request.
    expect((await pods['sd-z'].stats()).requests).toBe(1);
    await waitFor('the cut decode request to leave the router', async () => {
      const text = await (await fetch(`${router.url}/metrics`)).text();
      return text.includes('backend_pod="sd-z"') && total(text, 'inference_router_upstream_inflight_requests', 'backend_pod="sd-z"') === 0;
    });
    for (let i = 0; i < 6; i++) {
      const ok = await postJson(`${router.url}/v1/chat/completions`, { ...CHAT, model: 'policy-model', stream: i % 2 === 0 });
      expect(ok.status).toBe(200);
      expect(ok.headers.get('x-mock-pod')).toBe('sd-a');
      expect(ok.headers.get('x-mock-kv-from')).toBe('sp-a');
      await ok.text();
    }
  });

  it('a decode pod that answers 500: its answer is the client\'s, and the prefill request waiting for it is cut', async () => {
    const r = await postJson(`${router.url}/v1/completions`, { model: 'decode-bad-model', prompt: 'x' }, { 'x-request-id': 'sg-decode-bad' });
    expect(r.status).toBe(500);
    expect(r.headers.get('x-mock-pod')).toBe('sd-bad');
    await r.text();
    expect(await recordOf('sg-decode-bad')).toMatchObject({ status_code: 500, prefill_pod: 'sp-c', selected_pod: 'sd-bad' });
    expect((await pods['sp-c'].stats()).requests).toBe(1);
    // Not cut, the prefill would wait for a decode to join its room (a minute in the mock).
    await waitFor('the cut prefill request to leave the router', async () => {
      const text = await (await fetch(`${router.url}/metrics`)).text();
      return text.includes('backend_pod="sp-c"') && total(text, 'inference_router_upstream_inflight_requests', 'backend_pod="sp-c"') === 0;
    });
  });

  it('a decode pod that cannot be connected to: 502 upstream_unreachable naming it, and the prefill request sent with it is cut', async () => {
    const r = await postJson(`${router.url}/v1/completions`, { model: 'decode-dead-model', prompt: 'x' }, { 'x-request-id': 'sg-decode-dead', accept: 'application/json' });
    expect(r.status).toBe(502);
    const error = (await r.json() as { error: { code: string; message: string } }).error;
    expect(error.code).toBe('upstream_unreachable');
    expect(error.message).toContain('sd-dead');
    expect(await recordOf('sg-decode-dead')).toMatchObject({ status_code: 502, prefill_pod: 'sp-c', selected_pod: 'sd-dead' });
    // The prefill request went out with the decode one, and was cut (before or after it reached the pod).
    await waitFor('the cut prefill request to leave the router', async () => {
      const text = await (await fetch(`${router.url}/metrics`)).text();
      return text.includes('backend_pod="sp-c"') && total(text, 'inference_router_upstream_inflight_requests', 'backend_pod="sp-c"') === 0;
    });
  });
});
