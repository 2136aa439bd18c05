import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accessLogRecords, listenLocal, postJson, resourcesFor, startLoggedRouter, waitFor, type LoggedRouter } from '../helpers/processes.js';

// The usage the router asked for on a client's behalf (the client streams without
// stream_options.include_usage) must not reach that client in any spelling a JSON parser reads as
// a `usage` member, and the router must still read it. A scripted pod sends the shapes: JSON over
// several data lines, the key twice, the key with escapes, JSON white space before the object (a
// second space after `data:`, a tab, an empty first data line), an event over the 1 MiB hold
// bound (forwarded as it comes, the member cut as it passes: also after more than 4 KiB of white
// space or lines, and with a usage value over 64 KiB), usage that is not an object, and an escaped
// usage key set beside a plain `"usage": null`.

const USAGE = '{"prompt_tokens":3,"completion_tokens":42,"total_tokens":45}';
const HEAD = '{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m"';
const content = (text: string, finish = 'null'): string => `"choices":[{"index":0,"delta":{"content":${JSON.stringify(text)}},"finish_reason":${finish}}]`;

/** Each scenario: the events the pod sends (with its `\n\n`), as it writes them. */
const SCENARIOS: Record<string, string[]> = {
  'multi-line': [
    `data: ${HEAD},${content('Hel')}}\n\n`,
    `data: ${HEAD},${content('lo', '"stop"')},\ndata: "usage":\ndata: ${USAGE},\ndata: "timings":{"predicted_n":2}}\n\n`,
    'data: [DONE]\n\n',
  ],
  duplicate: [
    `data: ${HEAD},${content('Hel')}}\n\n`,
    `data: ${HEAD},"usage":null,${content('lo', '"stop"')},"usage":${USAGE}}\n\n`,
    'data: [DONE]\n\n',
  ],
  escaped: [
    `data: ${HEAD},${content('Hel')}}\n\n`,
    `data: ${HEAD},${content('lo', '"stop"')},"\\u0075sage":${USAGE}}\n\n`,
    'data: [DONE]\n\n',
  ],
  'leading-space': [
    `data:  ${HEAD},${content('Hel')}}\n\n`,
    `data:\t${HEAD},${content('lo', '"stop"')},"usage":${USAGE}}\n\n`,
    'data: [DONE]\n\n',
  ],
  'leading-space-usage-chunk': [
    `data: ${HEAD},${content('Hello', '"stop"')}}\n\n`,
    `data:\ndata: ${HEAD},"choices":[],"usage":${USAGE}}\n\n`,
    'data: [DONE]\n\n',
  ],
  giant: [
    `data: ${HEAD},${content('Hel')}}\n\n`,
    `data: ${HEAD},${content('x'.repeat(1536 * 1024), '"stop"')},"usage":${USAGE},"timings":{"predicted_n":2}}\n\n`,
    'data: [DONE]\n\n',
  ],
  'giant-far-key': [
    `data: ${HEAD},${content('Hel')}}\n\n`,
    `data: ${HEAD},${content('x'.repeat(1536 * 1024), '"stop"')},${' '.repeat(5000)}\ndata:\n: ${'c'.repeat(5000)}\ndata: "usage":${USAGE}}\n\n`,
    'data: [DONE]\n\n',
  ],
  'giant-large-usage': [
    `data: ${HEAD},${content('Hel')}}\n\n`,
    `data: ${HEAD},${content('x'.repeat(1536 * 1024), '"stop"')},"usage":{"pad":"${'p'.repeat(100_000)}",${USAGE.slice(1, -1)},"details":[${'{"n":1},'.repeat(20_000)}{}]}}\n\n`,
    'data: [DONE]\n\n',
  ],
};

/** The same, with no usage a client could read or the router count from: the router counts the text itself. */
const OWN_COUNT: Record<string, string[]> = {
  'no-usage': [`data: ${HEAD},${content('Hel')}}\n\n`, `data: ${HEAD},${content('lo', '"stop"')}}\n\n`, 'data: [DONE]\n\n'],
  'usage-true': [`data: ${HEAD},${content('Hel')}}\n\n`, `data: ${HEAD},${content('lo', '"stop"')},"usage":true}\n\n`, 'data: [DONE]\n\n'],
  'usage-number': [`data: ${HEAD},${content('Hel')}}\n\n`, `data: ${HEAD},"usage":42,${content('lo', '"stop"')}}\n\n`, 'data: [DONE]\n\n'],
  'usage-string': [`data: ${HEAD},${content('Hel')}}\n\n`, `data: ${HEAD},${content('lo', '"stop"')},"usage":"42"}\n\n`, 'data: [DONE]\n\n'],
  'usage-array': [`data: ${HEAD},${content('Hel')}}\n\n`, `data: ${HEAD},${content('lo', '"stop"')}}\n\n`, `data: ${HEAD},"choices":[],"usage":[3,42]}\n\n`, 'data: [DONE]\n\n'],
  // A parser keeps the last member: null; the set one is cut all the same.
  'escaped-then-null': [`data: ${HEAD},${content('Hel')}}\n\n`, `data: ${HEAD},${content('lo', '"stop"')},"\\u0075sage":${USAGE},"usage":null}\n\n`, 'data: [DONE]\n\n'],
};

/** OpenAI's and vLLM's shape: `"usage":null` on every content chunk, then the usage-only chunk. */
const NULL_USAGE = [
  `data: ${HEAD},${content('Hel')},"usage":null}\n\n`,
  `data: ${HEAD},${content('lo', '"stop"')},"usage":null}\n\n`,
  `data: ${HEAD},"choices":[],"usage":${USAGE}}\n\n`,
  'data: [DONE]\n\n',
];

/** The events of an SSE body as a client reads them: each event's data lines joined with "\n". */
function eventData(text: string): string[] {
  return text.split(/\n\n/).filter((e) => e !== '').map((e) => e.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.replace(/^data: ?/, '')).join('\n'));
}

describe('the usage asked for on the client\'s behalf, in every shape a pod may send it', () => {
  let pod: Server;
  let router: LoggedRouter;
  beforeAll(async () => {
    pod = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const scenario = String(req.headers['x-scenario']);
        for (const e of scenario === 'null-usage' ? NULL_USAGE : SCENARIOS[scenario] ?? OWN_COUNT[scenario]) res.write(e);
        res.end();
      });
    });
    const port = await listenLocal(pod);
    router = await startLoggedRouter(resourcesFor([{ name: 'pod-s', port }]));
  });
  afterAll(async () => {
    await router?.kill();
    await new Promise((r) => pod?.close(r));
  });

  const body = { model: 'sf-model', messages: [{ role: 'user', content: 'hi' }], stream: true };

  /** Streams the scenario to a client that did not ask for usage: it must read none, and every other member as the pod sent it. */
  async function noUsageRead(scenario: string, events: string[], id = `not-asked-${scenario}`): Promise<any> {
    const r = await postJson(`${router.url}/v1/chat/completions`, body, { 'x-scenario': scenario, 'x-request-id': id });
    expect(r.status).toBe(200);
    const text = await r.text();
    expect(text).not.toMatch(/usage|u0075sage/);
    const data = eventData(text);
    expect(data[data.length - 1]).toBe('[DONE]');
    const chunks = data.slice(0, -1).map((d) => JSON.parse(d) as Record<string, unknown>);
    for (const chunk of chunks) expect(Object.keys(chunk)).not.toContain('usage');
    const sent = eventData(events.join('')).slice(0, -1).map((d) => JSON.parse(d) as Record<string, unknown>)
      .filter((e) => !(Array.isArray(e.choices) && e.choices.length === 0 && typeof e.usage === 'object' && e.usage !== null && !Array.isArray(e.usage)));
    for (const e of sent) delete e.usage;
    expect(chunks).toEqual(sent);
    return waitFor('access record', () => accessLogRecords(router.logFile).find((x) => x.request_id === id));
  }

  for (const scenario of Object.keys(SCENARIOS)) {
    it(`${scenario}: the client that did not ask reads no usage; the router counts the pod's`, async () => {
      const record = await noUsageRead(scenario, SCENARIOS[scenario]);
      expect(record).toMatchObject({ status_code: 200, input_tokens: 3, output_tokens: 42 });
    });
  }

  for (const scenario of Object.keys(OWN_COUNT)) {
    it(`${scenario}: the client that did not ask reads no usage; the router counts as for a stream without usage`, async () => {
      const record = await noUsageRead(scenario, OWN_COUNT[scenario]);
      const reference = await noUsageRead('no-usage', OWN_COUNT['no-usage'], `reference-for-${scenario}`);
      expect(record.status_code).toBe(200);
      expect(record.input_tokens).toBe(reference.input_tokens);
      expect(record.output_tokens).toBe(reference.output_tokens);
      expect(record.output_tokens).not.toBe(42);
    });
  }

  it('"usage":null on the content chunks (the pod was asked) is forwarded as sent; the usage-only chunk is removed', async () => {
    const r = await postJson(`${router.url}/v1/chat/completions`, body, { 'x-scenario': 'null-usage', 'x-request-id': 'not-asked-null' });
    expect(await r.text()).toBe(`${NULL_USAGE[0]}${NULL_USAGE[1]}${NULL_USAGE[3]}`);
    const record = await waitFor('access record', () => accessLogRecords(router.logFile).find((x) => x.request_id === 'not-asked-null'));
    expect(record).toMatchObject({ status_code: 200, input_tokens: 3, output_tokens: 42 });
  });
});
