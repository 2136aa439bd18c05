/**
 * A stream whose pod sends `[DONE]` and then does not end its answer: it holds the connection
 * open (no last chunk), or breaks it. The client's stream ends whole, at once (the pod has
 * FINISHED_STREAM_END_MS to end it), with no error event after `[DONE]`; the request is recorded
 * as the success it was, and the pod is not counted as failing.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { chunk, rawPod } from '../helpers/raw-requests.js';
import { accessLogRecords, resourcesFor, startLoggedRouter, waitFor, type LoggedRouter } from '../helpers/processes.js';

const EVENT = 'data: {"id":"c","object":"text_completion","model":"m","choices":[{"index":0,"text":"hi","finish_reason":null}]}\n\n';
const USAGE = 'data: {"id":"c","object":"text_completion","model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}\n\n';
const DONE = 'data: [DONE]\n\n';

/** A pod that answers each request with a stream ending in `[DONE]`, then holds the answer open (`hold`) or breaks the connection (`break`). */
function podAfterDone(mode: 'hold' | 'break'): Promise<{ port: number; close: () => Promise<void> }> {
  return rawPod((s) => {
    s.write(`HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n${chunk(EVENT)}${chunk(USAGE)}${chunk(DONE)}`, () => {
      if (mode === 'break') setTimeout(() => s.destroy(), 20);
    });
  });
}

describe('a pod that does not end its stream after [DONE]', () => {
  let router: LoggedRouter | undefined;
  let pod: { close: () => Promise<void> } | undefined;
  afterEach(async () => {
    await router?.kill();
    await pod?.close();
    router = pod = undefined;
  });

  for (const mode of ['hold', 'break'] as const) {
    it(`${mode}: the client's stream ends whole, without an error event, long before the timeout; recorded a success, the pod not failing`, async () => {
      const p = await podAfterDone(mode);
      pod = p;
      router = await startLoggedRouter(resourcesFor([{ name: 'pod-a', port: p.port }], { timeout: '60s' }));
      const t0 = Date.now();
      const r = await fetch(`${router.url}/v1/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sf-model', prompt: 'x', stream: true }),
      });
      expect(r.status).toBe(200);
      const text = await r.text();
      const elapsed = Date.now() - t0;
      expect(text.endsWith(DONE)).toBe(true);
      expect(text).not.toContain('error');
      // Without the end asked for at [DONE], the hold lasts the ModelServer's timeout (60 s).
      expect(elapsed).toBeLessThan(30_000);
      const records = await waitFor('the record', () => {
        const rs = accessLogRecords(router!.logFile);
        return rs.length === 1 ? rs : null;
      });
      expect(records[0].status_code).toBe(200);
      expect(records[0].error_type ?? null).toBe(null);
      expect(records[0].output_tokens).toBe(2);
      const metrics = await (await fetch(`${router.url}/metrics`)).text();
      const resets = metrics.split('\n').find((l) => l.startsWith('inference_router_upstream_resets_total{') && l.includes('pod="pod-a"'));
      expect(resets === undefined ? 0 : Number(resets.split(' ').at(-1))).toBe(0);
      // A second request goes out as the first did (a new connection: the first was not reused).
      const again = await fetch(`${router.url}/v1/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sf-model', prompt: 'x', stream: true }),
      });
      expect((await again.text()).endsWith(DONE)).toBe(true);
    }, 60_000);
  }
});
