import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accessLogRecords, awayFromMinuteBoundary, awayFromWindowEnd, postJson, resourcesFor, startLoggedRouter, startMock, waitFor, type LoggedRouter, type MockBackend } from '../helpers/processes.js';

const PROMPT = 'San Francisco is a'; // 4 input tokens by the router's count, 5 by the mock's usage

function route(model: string, rateLimit: string): string {
  return `---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelRoute
metadata: { name: ${model}-route, namespace: default }
spec:
  modelName: ${model}
  rules: [{ name: r, targetModels: [{ modelServerName: sf-server }] }]
  rateLimit: { ${rateLimit} }
`;
}

/** Calls fn, which must throw; returns the error and how long it took. */
async function failure(fn: () => Promise<unknown>): Promise<{ err: unknown; ms: number }> {
  const t0 = performance.now();
  try {
    await fn();
  } catch (err) {
    return { err, ms: performance.now() - t0 };
  }
  throw new Error('expected the call to fail');
}

type LogRecord = { request_id: string; status_code: number; error?: { type: string; message: string } };

/** A day's window whose reset is nearer than this is waited out first (retry-after must stay over 60 s). */
const MIDNIGHT_MARGIN_S = 100;

describe('the official openai SDK retrying (its default maxRetries of 2) on the router\'s 429s', () => {
  let mock: MockBackend;
  let router: LoggedRouter;
  let client: OpenAI;

  beforeAll(async () => {
    mock = await startMock('pod-a');
    const extra = route('per-day', 'inputTokensPerUnit: 4, unit: day')
      + route('per-minute', 'inputTokensPerUnit: 3, unit: minute')
      + route('per-second', 'inputTokensPerUnit: 6, unit: second');
    router = await startLoggedRouter(resourcesFor([{ name: 'pod-a', port: mock.port }], { extraRoutes: extra }));
    client = new OpenAI({ baseURL: `${router.url}/v1`, apiKey: 'sk-any' });
  });
  afterAll(async () => {
    await router?.kill();
    await mock?.kill();
  });

  const records = (id: string): LogRecord[] => (accessLogRecords(router.logFile) as LogRecord[]).filter((r) => r.request_id === id);

  it('a limit whose window ends more than a minute later (a day): RateLimitError at once, not a call asleep until the window ends', async () => {
    // Within MIDNIGHT_MARGIN_S of a UTC midnight the reset is near enough to be waited for: start after it
    // (the test's timeout allows for that wait).
    await awayFromWindowEnd(86_400, MIDNIGHT_MARGIN_S);
    expect((await client.completions.create({ model: 'per-day', prompt: PROMPT })).usage?.prompt_tokens).toBe(5);
    const { err, ms } = await failure(() => client.completions.create({ model: 'per-day', prompt: PROMPT }, { headers: { 'x-request-id': 'per-day-refused' } }));
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    const e = err as InstanceType<typeof OpenAI.RateLimitError>;
    expect([e.code, e.message]).toEqual(['input_tokens_exceeded', '429 input token rate limit exceeded']);
    expect(e.headers.get('x-should-retry')).toBe('false');
    expect(Number(e.headers.get('retry-after'))).toBeGreaterThan(60);
    expect(ms).toBeLessThan(5000);
    // Asked once: no retry.
    const logged = await waitFor('its record', () => { const r = records('per-day-refused'); return r.length > 0 ? r : null; }, 5000);
    expect(logged.map((r) => r.status_code)).toEqual([429]);
  }, 20_000 + MIDNIGHT_MARGIN_S * 1000);

  it('a prompt larger than the whole limit: RateLimitError at once, not retried after the window', async () => {
    const { err, ms } = await failure(() => client.completions.create({ model: 'per-minute', prompt: PROMPT }, { headers: { 'x-request-id': 'never-fits' } }));
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    const e = err as InstanceType<typeof OpenAI.RateLimitError>;
    expect(e.error).toEqual({ message: 'input token rate limit exceeded', type: 'rate_limit', param: null, code: 'input_tokens_exceeded' });
    expect(e.headers.get('x-should-retry')).toBe('false');
    expect(Number(e.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    expect(ms).toBeLessThan(5000);
    const logged = await waitFor('its record', () => { const r = records('never-fits'); return r.length > 0 ? r : null; }, 5000);
    expect(logged.map((r) => [r.status_code, r.error?.message])).toEqual([[429, 'input token rate limit exceeded']]);
    // curl's plain text carries the same header.
    const text = await postJson(`${router.url}/v1/completions`, { model: 'per-minute', prompt: PROMPT });
    expect([text.status, text.headers.get('x-should-retry'), await text.text()]).toEqual([429, 'false', 'input token rate limit exceeded']);
  }, 20_000);

  it('a limit of a second: the SDK waits the retry-after and its retry is admitted', async () => {
    await awayFromMinuteBoundary(3);
    // Until one attempt was refused and the retry admitted (a call that lands in a fresh second is admitted at once).
    for (let attempt = 0; attempt < 10; attempt++) {
      const id = `per-second-${attempt}`;
      await (await postJson(`${router.url}/v1/completions`, { model: 'per-second', prompt: PROMPT })).text();
      const t0 = performance.now();
      const ok = await client.completions.create({ model: 'per-second', prompt: PROMPT }, { headers: { 'x-request-id': id } });
      const ms = performance.now() - t0;
      expect(ok.choices[0]?.text).toBeTypeOf('string');
      const logged = await waitFor('its records', () => { const r = records(id); return r.length > 0 && r.at(-1)!.status_code === 200 ? r : null; }, 5000);
      if (logged.length === 1) continue;
      expect(logged.map((r) => r.status_code)).toEqual([429, 200]);
      expect(ms).toBeGreaterThanOrEqual(900); // retry-after: 1
      return;
    }
    throw new Error('no call was refused once and then admitted');
  }, 30_000);
});
