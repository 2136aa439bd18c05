/**
 * A storm of mixed client and pod behaviours against the built router (2 workers, JSON access log,
 * token-limited routes beside open ones, their limit local or in a real redis-server, two mock
 * pods), many at once on kept-alive and fresh connections: whole answers and streams (chat,
 * completions, Responses), embeddings, long prompts counted on the tokenizer thread, chunked
 * uploads, a long stream read slowly, clients that leave mid-stream, mid-upload or while the pod thinks, malformed bodies, bodies over the limit,
 * unknown models, pods answering 500, closing without an answer, too slow for their ModelServer's
 * timeout, cutting a stream or sending their own error event in it; once as it is, once while the
 * resources file changes under it. Whatever the mix and its order (a random one per run; its seed
 * is in every failure message, ROUTER_TEST_MIX_SEED replays one): each request has exactly one
 * access-log record, with the status the client saw (499 for one that left) and the error type its
 * behaviour makes; a limited route admits no more than its budget; the requests counter grows by
 * the records; no worker dies, nothing is logged at level error, and the router answers as before
 * afterwards.
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accessLogRecords, awayFromWindowEnd, resourcesFor, startLoggedRouter, startMock, waitFor, type LoggedRouter, type MockBackend } from '../helpers/processes.js';
import { mulberry32 } from '../helpers/mulberry32.js';
import { RedisServer, redisCommand } from '../helpers/redis-server.js';
import { raw } from '../helpers/raw-http.js';
import { modelRouteYaml } from '../helpers/resource-yaml.js';

const SEED = Number(process.env.ROUTER_TEST_MIX_SEED ?? Math.floor(Math.random() * 2 ** 31));
const REQUESTS = 1200;
const CONCURRENCY = 32;
/** The limited route's input tokens an hour (LIMITED_PROMPT is 4). */
const LIMITED_BUDGET = 60;
/**
 * A storm whose budget is checked starts at least this long before an hour's end (a storm across
 * it would have two budgets): longer than a storm on a slow machine. The tests wait for it before
 * they start what runs beside the storm (the file changes), not in stormAndCheck.
 */
const STORM_MARGIN_S = 90;

type Kind =
  | 'plain' | 'chat-stream' | 'leave-mid-stream' | 'malformed' | 'unknown-model' | 'pod-500' | 'pod-close'
  | 'stream-cut' | 'stream-error-event' | 'leave-mid-upload' | 'leave-while-pod-thinks' | 'limited'
  | 'pod-too-slow' | 'body-too-large' | 'long-prompt' | 'responses-stream' | 'embeddings'
  | 'slow-reader-stream' | 'chunked-upload';
const KINDS: readonly Kind[] = [
  'plain', 'chat-stream', 'leave-mid-stream', 'malformed', 'unknown-model', 'pod-500', 'pod-close',
  'stream-cut', 'stream-error-event', 'leave-mid-upload', 'leave-while-pod-thinks', 'limited',
  'pod-too-slow', 'body-too-large', 'long-prompt', 'responses-stream', 'embeddings',
  'slow-reader-stream', 'chunked-upload',
];
/** ROUTER_MAX_BODY_BYTES here: 'body-too-large' sends twice as much. */
const MAX_BODY_BYTES = 64 * 1024;

/** What the client saw: the status (0: it left before one came), the text read, and whether the answer was broken off. */
interface Seen { kind: Kind; id: string; status: number; text: string; broken: boolean }

/** What the record of each kind must say: its status and error type (null: none), or a check of the status alone. */
const EXPECTED: Record<Kind, { status: number | 'as seen'; error: string | null | 'any' }> = {
  'plain': { status: 200, error: null },
  'chat-stream': { status: 200, error: null },
  'leave-mid-stream': { status: 499, error: 'client_closed' },
  'malformed': { status: 400, error: 'invalid_request' },
  'unknown-model': { status: 404, error: 'model_not_found' },
  'pod-500': { status: 500, error: 'upstream_error' },
  'pod-close': { status: 502, error: 'upstream_error' },
  'stream-cut': { status: 200, error: 'upstream_error' },
  'stream-error-event': { status: 200, error: 'upstream_error' },
  'leave-mid-upload': { status: 499, error: 'client_closed' },
  'leave-while-pod-thinks': { status: 499, error: 'client_closed' },
  'limited': { status: 'as seen', error: 'any' },
  'pod-too-slow': { status: 504, error: 'timeout' },
  'body-too-large': { status: 413, error: 'invalid_request' },
  'long-prompt': { status: 200, error: null },
  'responses-stream': { status: 200, error: null },
  'embeddings': { status: 200, error: null },
  'slow-reader-stream': { status: 200, error: null },
  'chunked-upload': { status: 200, error: null },
};

/**
 * Four tokens both as the router counts them (o200k_base) and as the mock pod reports them (a
 * token per 4 characters), so no answer corrects the admission's charge and the records' input
 * tokens are what was admitted.
 */
const LIMITED_PROMPT = 'cat dog cow pig';

function post(url: string, id: string, body: string, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': id, ...headers }, body, signal });
}

/** The whole answer's text, and whether the router broke it off (a stream cut partway: no last chunk, the connection closed). */
async function readAll(res: Response): Promise<{ text: string; broken: boolean }> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return { text, broken: false };
      text += decoder.decode(value, { stream: true });
    }
  } catch {
    return { text, broken: true };
  }
}

/** Reads a stream until `enough` says so, then leaves (the connection closed under it). */
async function readThenLeave(res: Response, controller: AbortController, enough: (text: string) => boolean): Promise<string> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return text;
    text += decoder.decode(value, { stream: true });
    if (enough(text)) {
      controller.abort();
      return text;
    }
  }
}

/** An upload announced as 400 bytes, 30 of them sent, then the connection closed. */
function leaveMidUpload(port: number, id: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => {
      s.write(`POST /v1/completions HTTP/1.1\r\nhost: router\r\ncontent-type: application/json\r\nx-request-id: ${id}\r\ncontent-length: 400\r\n\r\n{"model":"sf-model","prompt":"`);
      setTimeout(() => s.destroy(), 20);
    });
    s.on('error', reject);
    s.on('close', () => resolve());
  });
}

/** A whole request (the pod asked to think 2 s) on a connection of its own, closed `afterMs` after it was written. */
function leaveAfterSending(port: number, id: string, body: string, afterMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => {
      s.write(`POST /v1/completions HTTP/1.1\r\nhost: router\r\ncontent-type: application/json\r\nx-request-id: ${id}\r\n`
        + `x-mock-latency-ms: 2000\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`, () => setTimeout(() => s.destroy(), afterMs));
    });
    s.on('data', () => {});
    s.on('error', reject);
    s.on('close', () => resolve());
  });
}

async function send(router: LoggedRouter, kind: Kind, id: string, rand: () => number, limitedModel: string): Promise<Seen> {
  const completions = `${router.url}/v1/completions`;
  const chat = `${router.url}/v1/chat/completions`;
  const plainBody = JSON.stringify({ model: 'sf-model', prompt: `request ${id}`, max_tokens: 8 + Math.floor(rand() * 8) });
  const streamBody = JSON.stringify({ model: 'sf-model', stream: true, messages: [{ role: 'user', content: `request ${id}` }] });
  const seen = (status: number, text = '', broken = false): Seen => ({ kind, id, status, text, broken });
  switch (kind) {
    case 'plain': {
      const r = await post(completions, id, plainBody);
      return seen(r.status, await r.text());
    }
    case 'chat-stream':
    case 'stream-cut':
    case 'stream-error-event': {
      const headers: Record<string, string> = kind === 'stream-cut' ? { 'x-mock-cut-after': '3' } : kind === 'stream-error-event' ? { 'x-mock-error-after': '2' } : {};
      const r = await post(chat, id, streamBody, headers);
      const { text, broken } = await readAll(r);
      return seen(r.status, text, broken);
    }
    case 'leave-mid-stream': {
      const controller = new AbortController();
      const r = await post(chat, id, streamBody, { 'x-mock-stall-after': '2' }, controller.signal);
      const text = await readThenLeave(r, controller, (t) => (t.match(/^data: /gm) ?? []).length >= 2);
      return seen(r.status, text);
    }
    case 'malformed': {
      const r = await post(completions, id, '{"model": "sf-model", "prompt": ');
      return seen(r.status, await r.text());
    }
    case 'unknown-model': {
      const r = await post(completions, id, JSON.stringify({ model: 'no-such-model', prompt: 'x' }));
      return seen(r.status, await r.text());
    }
    case 'pod-500':
    case 'pod-close': {
      const r = await post(completions, id, plainBody, kind === 'pod-500' ? { 'x-mock-status': '500' } : { 'x-mock-close': '1' });
      return seen(r.status, await r.text());
    }
    case 'leave-mid-upload':
      await leaveMidUpload(router.port, id);
      return seen(0);
    case 'leave-while-pod-thinks':
      // The whole request written on a connection of its own, which closes 50 to 150 ms later (a
      // fetch aborted that soon may not have sent its request yet on a loaded machine).
      await leaveAfterSending(router.port, id, plainBody, 50 + Math.floor(rand() * 100));
      return seen(0);
    case 'pod-too-slow': {
      // The hasty route's ModelServer waits 300 ms for an answer.
      const r = await post(completions, id, JSON.stringify({ model: 'hasty-model', prompt: 'x' }), { 'x-mock-latency-ms': '3000' });
      return seen(r.status, await r.text());
    }
    case 'body-too-large': {
      const r = await post(completions, id, JSON.stringify({ model: 'sf-model', prompt: 'y'.repeat(2 * MAX_BODY_BYTES) }));
      return seen(r.status, await r.text());
    }
    case 'long-prompt': {
      // Longer than ROUTER_TOKENIZER_INLINE_MAX_CHARS (512): counted on the tokenizer thread.
      const prompt = Array.from({ length: 300 }, (_, i) => `word${(i * 7919 + Math.floor(rand() * 1000)) % 5000}`).join(' ');
      const r = await post(completions, id, JSON.stringify({ model: 'sf-model', prompt, max_tokens: 4 }));
      return seen(r.status, await r.text());
    }
    case 'responses-stream': {
      const r = await post(`${router.url}/v1/responses`, id, JSON.stringify({ model: 'sf-model', stream: true, input: `request ${id}` }));
      const { text, broken } = await readAll(r);
      return seen(r.status, text, broken);
    }
    case 'embeddings': {
      const r = await post(`${router.url}/v1/embeddings`, id, JSON.stringify({ model: 'sf-model', input: [`request ${id}`, 'second'] }));
      return seen(r.status, await r.text());
    }
    case 'slow-reader-stream': {
      // A long stream read with pauses: the router holds the pod's events back for this client.
      const r = await post(chat, id, streamBody, { 'x-mock-output-tokens': '2000' });
      const reader = r.body!.getReader();
      const decoder = new TextDecoder();
      let text = '';
      let reads = 0;
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
        if (++reads % 8 === 0) await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return seen(r.status, text);
    }
    case 'chunked-upload': {
      // The body in chunks, 5 ms apart, on a connection of its own closed after the answer.
      const body = JSON.stringify({ model: 'sf-model', prompt: `request ${id} sent in pieces`, max_tokens: 4 });
      const third = Math.ceil(body.length / 3);
      const pieces = [body.slice(0, third), body.slice(third, 2 * third), body.slice(2 * third)];
      const r = await raw(router.port, [
        `POST /v1/completions HTTP/1.1\r\nhost: router\r\ncontent-type: application/json\r\nx-request-id: ${id}\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n`,
        ...pieces.map((p) => `${Buffer.byteLength(p).toString(16)}\r\n${p}\r\n`),
        '0\r\n\r\n',
      ], { gapMs: 5, waitMs: 10_000 });
      return seen(Number(/^HTTP\/1\.1 (\d{3})/.exec(r.text)?.[1] ?? 0), r.text);
    }
    case 'limited': {
      const r = await post(completions, id, JSON.stringify({ model: limitedModel, prompt: LIMITED_PROMPT, max_tokens: 4 }));
      return seen(r.status, await r.text());
    }
  }
}

for (const mode of ['local', 'global'] as const) describe(`mixed client and pod behaviours at once, ${mode} limit (seed ${SEED})`, () => {
  let a: MockBackend;
  let b: MockBackend;
  let redis: RedisServer | null = null;
  let router: LoggedRouter;
  beforeAll(async () => {
    [a, b, redis] = await Promise.all([startMock('pod-a'), startMock('pod-b'), mode === 'global' ? RedisServer.start() : null]);
    const hasty = `---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelServer
metadata: { name: hasty-server, namespace: default }
spec:
  trafficPolicy: { timeout: 300ms }
  endpoints:
    - { name: pod-a, address: "127.0.0.1:${a.port}" }
    - { name: pod-b, address: "127.0.0.1:${b.port}" }
${modelRouteYaml('hasty-route', 'hasty-model', 'hasty-server')}`;
    const rateLimit = `  rateLimit:
    inputTokensPerUnit: ${LIMITED_BUDGET}
    outputTokensPerUnit: 100000
    unit: hour
${redis === null ? '' : `    global:\n      redis:\n        address: "${redis.address}"\n`}`;
    const limited = ['', '-2', '-3'].map((n) => modelRouteYaml(`tiny-route${n}`, `tiny-model${n}`, 'sf-server', rateLimit)).join('');
    router = await startLoggedRouter(resourcesFor([{ name: 'pod-a', port: a.port }, { name: 'pod-b', port: b.port }], { extraRoutes: limited + hasty }), {
      workers: 2,
      // The pods' 500s and closes are asked for: no pod is set aside for them here.
      env: { ROUTER_OUTLIER_CONSECUTIVE_5XX: '0', ROUTER_OUTLIER_CONSECUTIVE_FAILURES: '1000', ROUTER_MAX_BODY_BYTES: String(MAX_BODY_BYTES), RATE_LIMIT_REDIS_TIMEOUT: '5s' },
    });
  }, 60_000);
  afterAll(async () => {
    await router?.kill();
    await Promise.all([a?.kill(), b?.kill(), redis?.stop()]);
  });

  it('one record per request with the status the client saw and the error its behaviour makes; the budget held; no worker lost; answers as before after', async () => {
    await awayFromWindowEnd(3600, STORM_MARGIN_S);
    await stormAndCheck(router, redis, SEED, 'tiny-model', 'tiny-route');
  }, 120_000 + STORM_MARGIN_S * 1000);

  it('the same while the resources file changes under it every 250 ms (a pod taken out of its ModelServer and back, a file that fails validation): the budget held across the reloads', async () => {
    const file = router.resourcesFile;
    const good = readFileSync(file, 'utf8');
    // pod-a taken out of sf-server (requests at it finish there); tiny-route-2's limit unchanged.
    const withoutA = good.replace(/^ {4}- \{ name: pod-a, address: "[^"]+" \}\n(?=    - \{ name: pod-b)/m, '');
    expect(withoutA).not.toBe(good);
    const invalid = good.replace('modelName: sf-model', 'modelName: [sf-model]');
    const versions = [withoutA, good, invalid, withoutA, good];
    // Before the file starts changing: the storm's budget must be one hour's.
    await awayFromWindowEnd(3600, STORM_MARGIN_S);
    let stop = false;
    let written = 0;
    // Each version stays 250 ms, past the file watch's 100 ms of quiet before it reads (file-watch.ts),
    // and every version is written at least once, the storm over or not.
    const changes = (async () => {
      while (!stop || written < versions.length) {
        const text = versions[written++ % versions.length];
        writeFileSync(`${file}.tmp`, text);
        renameSync(`${file}.tmp`, file);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    })();
    try {
      await stormAndCheck(router, redis, SEED + 1, 'tiny-model-2', 'tiny-route-2');
      // Reloads were applied while the requests came, not only after.
      expect(router.stderr()).toMatch(/"event":"reload".*"applied":true/);
    } finally {
      stop = true;
      await changes;
      writeFileSync(`${file}.tmp`, good);
      renameSync(`${file}.tmp`, file);
    }
    await waitFor('the invalid file refused and the others applied', () =>
      /resources reload rejected, keeping the last good config: .*modelName/.test(router.stderr())
      && /"event":"reload".*"applied":true/.test(router.stderr()), 5_000);
  }, 120_000 + STORM_MARGIN_S * 1000);

  if (mode === 'global') it('the same while redis-server is killed and started again (empty) under it: one record each, answered by the failure mode (local) meanwhile', async () => {
    // No awayFromWindowEnd: the budget is not checked here (Redis loses its counts meanwhile).
    const outage = (async () => {
      await new Promise((resolve) => setTimeout(resolve, 400));
      await redis!.kill();
      await new Promise((resolve) => setTimeout(resolve, 500));
      await redis!.restart();
    })();
    try {
      await stormAndCheck(router, redis, SEED + 2, 'tiny-model-3', 'tiny-route-3', { budgetHeld: false });
    } finally {
      await outage;
    }
    // The operational log is JSON here (its quotes escaped).
    expect(router.stderr()).toMatch(/rate limit store \S+ is unavailable \(.*\); failure mode \\"local\\" applies until it answers again/);
    await waitFor('the store to be back', () => /rate limit store \S+ is available again; global limits are enforced/.test(router.stderr()), 10_000);
  }, 120_000);
});

/**
 * Sends REQUESTS requests of a random mix (`seed`), CONCURRENCY at once, and checks what the
 * clients saw, the access log's records, the limited route's budget, the requests counter and the
 * router's health. With `budgetHeld` (the default), the caller has made sure that the storm ends
 * within the current hour (awayFromWindowEnd(3600, STORM_MARGIN_S)).
 */
async function stormAndCheck(router: LoggedRouter, redis: RedisServer | null, seed: number, limitedModel: string, limitedRoute: string, opts: { budgetHeld: boolean } = { budgetHeld: true }): Promise<void> {
  // The requests counter by status (cumulative: read before the storm and after).
  const counted = async (): Promise<Map<string, number>> => {
    const text = await (await fetch(`${router.url}/metrics`)).text();
    const out = new Map<string, number>();
    for (const m of text.matchAll(/^inference_router_requests_total\{([^}]*)\} (\d+)$/gm)) {
      const status = /status="(\d+)"/.exec(m[1])![1];
      out.set(status, (out.get(status) ?? 0) + Number(m[2]));
    }
    return out;
  };
  const before = await counted();
  const rand = mulberry32(seed);
  const plan = Array.from({ length: REQUESTS }, (_, i) => ({ kind: KINDS[Math.floor(rand() * KINDS.length)], id: `mix-${seed}-${i}` }));
  const seen: Seen[] = [];
  let next = 0;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < plan.length) {
      const { kind, id } = plan[next++];
      seen.push(await send(router, kind, id, rand, limitedModel));
    }
  }));
  expect(new Set(plan.map((p) => p.kind)).size, `seed ${seed}`).toBe(KINDS.length);
  const where = (s: Seen): string => `seed ${seed}, request ${s.id} (${s.kind}), client saw ${s.status}${s.broken ? ' (broken off)' : ''}: ${s.text.slice(-300)}`;

  // What the clients saw, where they stayed to see it.
  for (const s of seen) {
    if (s.kind === 'chat-stream' || s.kind === 'slow-reader-stream') expect(s.text.trimEnd().endsWith('data: [DONE]'), where(s)).toBe(true);
    if (s.kind === 'slow-reader-stream') expect((s.text.match(/"content":"tok "/g) ?? []).length, where(s)).toBe(2000);
    if (s.kind === 'responses-stream') expect(s.text, where(s)).toContain('event: response.completed');
    if (s.kind === 'stream-cut' || s.kind === 'stream-error-event') expect(s.text, where(s)).toMatch(/"error":\{/);
    // A cut stream is broken off after the router's error event (errors.md); the pod's own error event ends it as usual.
    expect(s.broken, where(s)).toBe(s.kind === 'stream-cut');
    if (s.kind === 'limited') expect([200, 429], where(s)).toContain(s.status);
    const e = EXPECTED[s.kind];
    if (typeof e.status === 'number' && e.status !== 499) expect(s.status, where(s)).toBe(e.status);
  }

  // One record each, once every request has ended.
  const ids = new Set(plan.map((p) => p.id));
  await waitFor('a record of every request', () => accessLogRecords(router.logFile).filter((r) => ids.has(r.request_id)).length >= plan.length, 20_000)
    .catch(() => {
      const have = new Set(accessLogRecords(router.logFile).map((r) => r.request_id));
      const missing = seen.filter((x) => !have.has(x.id));
      throw new Error(`seed ${seed}: ${missing.length} request(s) without a record after 20 s: ${missing.slice(0, 10).map((x) => `${x.id} (${x.kind}, client saw ${x.status})`).join(', ')}`);
    });
  const records = accessLogRecords(router.logFile).filter((r) => ids.has(r.request_id));
  const byId = new Map<string, any[]>();
  for (const r of records) byId.set(r.request_id, [...(byId.get(r.request_id) ?? []), r]);
  for (const s of seen) {
    const mine = byId.get(s.id) ?? [];
    expect(mine.length, where(s)).toBe(1);
    const [r] = mine;
    const e = EXPECTED[s.kind];
    expect(r.status_code, where(s)).toBe(e.status === 'as seen' ? s.status : e.status);
    if (e.error !== 'any') expect(r.error?.type ?? null, where(s)).toBe(e.error);
    if (s.kind === 'limited') expect(r.error?.type ?? null, where(s)).toBe(s.status === 429 ? 'rate_limit' : null);
  }
  expect(records.length).toBe(plan.length);

  // The limited route admitted no more input tokens than its budget, across both workers (unless
  // Redis lost its counts meanwhile).
  const admitted = records.filter((r) => r.model_route === `default/${limitedRoute}` && r.status_code === 200);
  const inputAdmitted = admitted.reduce((sum, r) => sum + r.input_tokens, 0);
  if (opts.budgetHeld) expect(inputAdmitted, `seed ${seed}`).toBeLessThanOrEqual(LIMITED_BUDGET);
  if (seen.filter((s) => s.kind === 'limited').length * admitted[0]?.input_tokens > LIMITED_BUDGET) {
    expect(records.some((r) => r.model_route === `default/${limitedRoute}` && r.status_code === 429), `seed ${seed}`).toBe(true);
  }

  // In global mode the budget was kept in Redis.
  if (redis !== null && opts.budgetHeld) expect(Number((await redisCommand(redis.port, 'DBSIZE')).slice(1))).toBeGreaterThan(0);

  // The requests counter grew by the records, status by status (the check request after the storm comes later).
  const fromRecords = new Map<string, number>(before);
  for (const r of records) fromRecords.set(String(r.status_code), (fromRecords.get(String(r.status_code)) ?? 0) + 1);
  await waitFor('the counter to agree with the records', async () => JSON.stringify([...(await counted())].sort()) === JSON.stringify([...fromRecords].sort()), 10_000)
    .catch(async () => expect([...(await counted())].sort(), `seed ${seed}`).toEqual([...fromRecords].sort()));

  // No worker died, nothing at level error, and the router answers as before.
  expect(router.stderr(), `seed ${seed}`).not.toMatch(/"level":"error"| error \[/);
  expect(router.stderr(), `seed ${seed}`).not.toMatch(/worker \d+ exited|exited with|restarting/i);
  const after = await post(`${router.url}/v1/completions`, `mix-${seed}-after`, JSON.stringify({ model: 'sf-model', prompt: 'after the storm' }));
  expect(after.status).toBe(200);
  expect((await after.json() as { usage: { completion_tokens: number } }).usage.completion_tokens).toBe(16);
  expect((await fetch(`${router.url}/readyz`)).status).toBe(200);
}
