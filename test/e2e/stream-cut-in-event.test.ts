/**
 * A pod whose stream's framing ends inside an event (a content-length shorter than what it meant
 * to send, or its last chunk sent mid-event): the answer is complete as HTTP, the stream is not.
 * The request is recorded as failed (as when the pod breaks the connection partway), and the
 * client's stream does not end as if whole: a client reading events sees it broken, not a stream
 * whose last event lost its end. A stream whose framing ends right after `data: [DONE]` (no blank
 * line after it) is whole. Raw pods over real TCP, the built router.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { chunk, rawPod } from '../helpers/raw-requests.js';
import { accessLogRecords, resourcesFor, startLoggedRouter, waitFor, type LoggedRouter } from '../helpers/processes.js';

const EVENT = 'data: {"id":"c","object":"text_completion","model":"m","choices":[{"index":0,"text":"hi","finish_reason":null}]}\n\n';
const CUT = 'data: {"id":"c","object":"text_completion","model":"m","choices":[{"index":0,"text":';

const SSE = 'HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n';
const CASES: [string, () => string, boolean][] = [
  ['a content-length that ends mid-event', () => `${SSE}content-length: ${Buffer.byteLength(EVENT + CUT)}\r\n\r\n${EVENT}${CUT}`, false],
  ['the last chunk sent mid-event', () => `${SSE}transfer-encoding: chunked\r\n\r\n${chunk(EVENT)}${chunk(CUT)}0\r\n\r\n`, false],
  ['a content-length that ends right after data: [DONE]', () => `${SSE}content-length: ${Buffer.byteLength(`${EVENT}data: [DONE]`)}\r\n\r\n${EVENT}data: [DONE]`, true],
];

describe('a stream whose framing ends inside an event', () => {
  let router: LoggedRouter | undefined;
  let pod: { close: () => Promise<void> } | undefined;
  afterEach(async () => {
    await router?.kill();
    await pod?.close();
    router = pod = undefined;
  });

  for (const [what, answer, whole] of CASES) {
    it(`${what}: ${whole ? 'whole, recorded a success' : 'the client\'s stream is cut, recorded a failure naming it'}`, async () => {
      const p = await rawPod((socket) => socket.write(answer()));
      pod = p;
      router = await startLoggedRouter(resourcesFor([{ name: 'pod-a', port: p.port }]), { workers: 1 });
      const r = await fetch(`${router.url}/v1/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sf-model', prompt: 'x', stream: true }),
      });
      expect(r.status).toBe(200);
      let text = '';
      let broken = false;
      try {
        text = await r.text();
      } catch {
        broken = true;
      }
      const records = await waitFor('the record', () => {
        const rs = accessLogRecords(router!.logFile);
        return rs.length === 1 ? rs : null;
      });
      if (whole) {
        expect(broken).toBe(false);
        expect(text).toContain(EVENT);
        expect(records[0].error ?? null).toBe(null);
      } else {
        // Cut where the pod's event was cut: the client's read fails, as for a pod that broke the connection.
        expect(broken).toBe(true);
        expect(records[0]).toMatchObject({ status_code: 200, error: { type: 'upstream_error' } });
        expect(records[0].error.message).toContain('the event stream ended inside an event (no blank line after its last data, and no [DONE])');
      }
    });
  }
});
