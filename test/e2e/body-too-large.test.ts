import { connect } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accessLogRecords, resourcesFor, startLoggedRouter, startMock, waitFor, type LoggedRouter, type MockBackend } from '../helpers/processes.js';

const MAX = 65536;
const MESSAGE = `request body is larger than ${MAX} bytes (ROUTER_MAX_BODY_BYTES)`;

type LogRecord = { request_id: string; status_code: number; error?: { type: string; message: string } };

/**
 * A body over ROUTER_MAX_BODY_BYTES sent by a client that writes all of it before it reads the
 * answer (Node's fetch, so the openai SDK): the router reads the rest and drops it, then answers
 * 413. Closed at once, the upload was cut and the client saw a connection error, not the 413.
 */
describe('a request body over ROUTER_MAX_BODY_BYTES from a client that sends it all first', () => {
  let mock: MockBackend;
  let router: LoggedRouter;

  beforeAll(async () => {
    mock = await startMock('pod-a');
    router = await startLoggedRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), { env: { ROUTER_MAX_BODY_BYTES: String(MAX) } });
  });
  afterAll(async () => {
    await router?.kill();
    await mock?.kill();
  });

  const records = (id: string): LogRecord[] => (accessLogRecords(router.logFile) as LogRecord[]).filter((r) => r.request_id === id);

  it('the openai SDK gets the 413 with its JSON error, asked once (no retry of the upload), never forwarded', async () => {
    const client = new OpenAI({ baseURL: `${router.url}/v1`, apiKey: 'sk-any' }); // retries on connection errors: 2
    // Cut at once, uploads of 4 and 20 MB against a 64 KiB limit were connection errors 8 times in 10.
    const content = 'x'.repeat(16_000_000);
    for (let i = 0; i < 3; i++) {
      let err: unknown = null;
      try {
        await client.chat.completions.create({ model: 'sf-model', messages: [{ role: 'user', content }] }, { headers: { 'x-request-id': `too-large-sdk-${i}` } });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(OpenAI.APIError);
      const e = err as InstanceType<typeof OpenAI.APIError>;
      expect([e.status, e.error]).toEqual([413, { message: MESSAGE, type: 'invalid_request', param: null, code: 'request_too_large' }]);
      const logged = await waitFor('its record', () => { const r = records(`too-large-sdk-${i}`); return r.length > 0 ? r : null; }, 5000);
      expect(logged.map((r) => [r.status_code, r.error?.message])).toEqual([[413, MESSAGE]]);
    }
    expect((await mock.stats()).requests).toBe(0);
  }, 30_000);

  it('a chunked body (no content-length) that grows past the limit: the 413 after it', async () => {
    const part = new TextEncoder().encode(`"${'y'.repeat(65536)}",`);
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        if (sent === 0) c.enqueue(new TextEncoder().encode('{"model":"sf-model","prompt":['));
        if (sent++ < 40) c.enqueue(part);
        else {
          c.enqueue(new TextEncoder().encode('"z"]}'));
          c.close();
        }
      },
    });
    const r = await fetch(`${router.url}/v1/completions`, {
      method: 'POST', body, duplex: 'half', headers: { 'content-type': 'application/json', accept: 'application/json', 'x-request-id': 'too-large-chunked' },
    } as RequestInit);
    expect(r.status).toBe(413);
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe('request_too_large');
    expect(sent).toBe(41); // all of it was taken
    const logged = await waitFor('its record', () => { const l = records('too-large-chunked'); return l.length > 0 ? l : null; }, 5000);
    expect(logged.map((l) => l.status_code)).toEqual([413]);
  });

  /** The answer to a request head (and `start` of its body), read until the router closes. */
  function rawAnswer(head: string, start: string): Promise<string> {
    return new Promise<string>((resolve, reject) => {
      const s = connect(router.port, '127.0.0.1');
      let got = '';
      s.on('data', (d) => { got += d.toString('latin1'); });
      s.on('close', () => resolve(got));
      s.on('error', reject);
      s.write(`POST /v1/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n${head}\r\n${start}`);
    });
  }

  it('a request behind a body over the limit in the same write never reaches the pod: the connection closes, the 413 is recorded', async () => {
    const before = (await mock.stats()).requests;
    const behind = JSON.stringify({ model: 'sf-model', prompt: 'behind' });
    const next = `POST /v1/completions HTTP/1.1\r\nhost: x\r\nx-request-id: behind-413\r\ncontent-type: application/json\r\ncontent-length: ${behind.length}\r\n\r\n${behind}`;
    const big = `{"model":"sf-model","prompt":"${'y'.repeat(MAX)}"}`;
    // Declared (content-length), then chunked: each refused once its body has come.
    const chunked = `${big.length.toString(16)}\r\n${big}\r\n0\r\n\r\n`;
    for (const [id, head, body] of [
      ['over-cl', `content-length: ${big.length}\r\n`, big],
      ['over-chunked', 'transfer-encoding: chunked\r\n', chunked],
    ] as const) {
      const answer = await rawAnswer(`x-request-id: ${id}\r\n${head}`, body + next);
      expect(answer, id).not.toMatch(/HTTP\/1\.1 200/);
      const logged = await waitFor(`the record of ${id}`, () => { const l = records(id); return l.length > 0 ? l : null; }, 5000);
      expect(logged.map((l) => [l.status_code, l.error?.message]), id).toEqual([[413, MESSAGE]]);
    }
    await new Promise((r) => setTimeout(r, 300));
    expect(records('behind-413')).toEqual([]);
    expect((await mock.stats()).requests).toBe(before);
  });

  it('a body declared longer than the limit and 64 MiB more: answered at once, nothing of it waited for', async () => {
    const answer = await rawAnswer(`content-length: ${MAX + 64 * 1024 * 1024 + 1}\r\n`, '{"model":');
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer.endsWith(MESSAGE)).toBe(true);
  });

  it('a client that waits for 100 Continue (curl\'s Expect for a large body) is answered at once and sends none of it', async () => {
    const t0 = performance.now();
    const answer = await rawAnswer(`content-length: ${4 * MAX}\r\nexpect: 100-continue\r\n`, '');
    expect(answer).toMatch(/413 Payload Too Large/);
    expect(answer.endsWith(MESSAGE)).toBe(true);
    expect(performance.now() - t0).toBeLessThan(5000); // not the 10 s idle timeout of a body never sent
  }, 15_000);
});
