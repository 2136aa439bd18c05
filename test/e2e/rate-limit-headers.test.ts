import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { awayFromWindowEnd, postFresh, resourcesFor, startMock, startRouter, tempDir, type MockBackend, type RouterOptions } from '../helpers/processes.js';
import { RedisServer } from '../helpers/redis-server.js';

// The x-ratelimit-remaining-* headers must tell clients what requests used of the window,
// whatever the router does internally (leases held by workers in local mode). A sequence of
// requests on fresh connections (spread over the workers by the kernel), each with known token
// counts, is compared with limit − what was charged; the slack allowed is one request per
// worker (a charge still on its way between processes). The requests are a client's sequence, a
// few tens of milliseconds apart (REQUEST_GAP_MS), so what one worker charged has reached the
// others through the primary (a worker reports at once when its last report is 50 ms old, as it
// is at this spacing) however loaded the machine is.

const LIMIT = 100_000;
// 4 BPE tokens, and the mock reports prompt_tokens = ceil(14 / 4) = 4: no correction of the input.
const PROMPT = 'Tell me a joke';
const REQUESTS = 24;
const REQUEST_GAP_MS = 75;

function limitYaml(global: string | null): string {
  const g = global === null ? '' : `\n    global:\n      redis:\n        address: "${global}"`;
  return `    inputTokensPerUnit: ${LIMIT}\n    outputTokensPerUnit: ${LIMIT}\n    unit: day${g}`;
}

async function checkSequence(mock: MockBackend, global: string | null, opts: RouterOptions, workers: number): Promise<void> {
  const router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }], { rateLimit: limitYaml(global) }), opts);
  try {
    // A day's limit: the sequence (~3 s) must not cross a UTC day's end, which would reset the counts.
    await awayFromWindowEnd(86_400, 20);
    const promptTokens = countTokens(PROMPT);
    expect(promptTokens).toBe(Math.ceil(PROMPT.length / 4));
    let input = 0;
    let output = 0;
    const misses: string[] = [];
    for (let i = 0; i < REQUESTS; i++) {
      if (i > 0) await new Promise((resolve) => setTimeout(resolve, REQUEST_GAP_MS));
      const r = await postFresh(`${router.url}/v1/completions`, { model: 'sf-model', prompt: PROMPT });
      expect(r.status).toBe(200);
      const usage = (JSON.parse(r.text) as { usage: { prompt_tokens: number; completion_tokens: number } }).usage;
      expect(usage.prompt_tokens).toBe(promptTokens);
      input += promptTokens; // charged on admission, before the headers
      const inRemaining = Number(r.headers['x-ratelimit-remaining-input-tokens']);
      const outRemaining = Number(r.headers['x-ratelimit-remaining-output-tokens']);
      // Within one request per worker of the truth, either way.
      if (Math.abs(inRemaining - (LIMIT - input)) > workers * promptTokens) misses.push(`#${i} input ${inRemaining}, true ${LIMIT - input}`);
      if (Math.abs(outRemaining - (LIMIT - output)) > workers * usage.completion_tokens) misses.push(`#${i} output ${outRemaining}, true ${LIMIT - output}`);
      output += usage.completion_tokens; // charged when the answer ends, after the headers
    }
    expect(misses).toEqual([]);
  } finally {
    await router.kill();
  }
}

describe('x-ratelimit-remaining-* headers count what requests used', () => {
  let mock: MockBackend;
  let redis: RedisServer;
  beforeAll(async () => {
    [mock, redis] = await Promise.all([startMock('pod-a'), RedisServer.start()]);
  });
  afterAll(async () => {
    await Promise.all([mock?.kill(), redis?.stop()]);
  });

  it.each([2, 4])('local mode with leases, %i workers: budget leased to workers does not count as used', async (workers) => {
    await checkSequence(mock, null, { workers }, workers);
  });

  it.each([2, 4])('global mode (Redis), %i workers', async (workers) => {
    await redis.cli('FLUSHALL');
    const env = { RATE_LIMIT_REDIS_FAILURE_MODE: 'closed', RATE_LIMIT_REDIS_TIMEOUT: '5s' };
    await checkSequence(mock, redis.address, { workers, env, dir: tempDir() }, workers);
  });
});
