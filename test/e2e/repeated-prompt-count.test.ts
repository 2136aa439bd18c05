import { existsSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postJson, resourcesFor, startLoggedRouter, startMock, waitFor, type MockBackend, type Router } from '../helpers/processes.js';
import { sample } from '../helpers/metrics-text.js';

// An agent's turns: the same long system prompt and tool list, a new short question each time.
const SYSTEM = Array.from({ length: 60 }, (_, i) => `${i + 1}. Answer briefly and cite the catalogue entry you used (rule ${i}).`).join('\n');
const TOOLS = Array.from({ length: 5 }, (_, i) => ({
  type: 'function', function: { name: `lookup_${i}`, description: `Looks up records of kind ${i} by identifier.`, parameters: { type: 'object', properties: { id: { type: 'string' } } } },
}));
const turn = (i: number): Record<string, unknown> => ({
  model: 'sf-model',
  messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: `Question ${i}: where is order ${1000 + i}?` }],
  tools: TOOLS,
});

interface Side { router: Router; logFile: string }

async function startSide(mock: MockBackend, env: NodeJS.ProcessEnv): Promise<Side> {
  const router = await startLoggedRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), { env });
  return { router, logFile: router.logFile };
}

async function inputTokens(side: Side, requests: number): Promise<number[]> {
  for (let i = 0; i < requests; i++) {
    const r = await postJson(`${side.router.url}/v1/chat/completions`, turn(i));
    expect(r.status).toBe(200);
    await r.text();
  }
  const records = await waitFor('access log records', () => {
    const recs = existsSync(side.logFile) ? readFileSync(side.logFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
    return recs.length >= requests ? recs : null;
  });
  return records.map((r: { input_tokens: number }) => r.input_tokens);
}

async function metricsText(side: Side): Promise<string> {
  const r = await fetch(`${side.router.url}/metrics`);
  expect(r.status).toBe(200);
  return r.text();
}

describe('the prompt texts an application repeats are counted once per router process', () => {
  let mock: MockBackend;
  let cached: Side;
  let uncached: Side;

  beforeAll(async () => {
    mock = await startMock('pod-a');
    cached = await startSide(mock, {});
    uncached = await startSide(mock, { ROUTER_TOKENIZER_CACHE_CHARS: '0' });
  });
  afterAll(async () => {
    await cached?.router.kill();
    await uncached?.router.kill();
    await mock?.kill();
  });

  it('logs the same input tokens as a router without the cache, and counts its hits', async () => {
    const n = 4;
    const want = await inputTokens(uncached, n);
    const got = await inputTokens(cached, n);
    expect(got).toEqual(want);
    // Each turn's count: the system prompt and the tools are the same, the question a few tokens.
    expect(Math.min(...want)).toBeGreaterThan(SYSTEM.length / 8);
    const t = await metricsText(cached);
    // The first turn misses the system prompt and the tools' JSON text; the next three find both.
    expect(sample(t, 'inference_router_token_count_cache_texts_total{result="miss"}')).toBe(2);
    expect(sample(t, 'inference_router_token_count_cache_texts_total{result="hit"}')).toBe(2 * (n - 1));
    const off = await metricsText(uncached);
    expect(sample(off, 'inference_router_token_count_cache_texts_total{result="hit"}')).toBe(0);
    expect(sample(off, 'inference_router_token_count_cache_texts_total{result="miss"}')).toBe(0);
  });
});
