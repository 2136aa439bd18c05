import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { awayFromMinuteBoundary, postFresh, postJson, resourcesFor, startMock, startRouter, type MockBackend, unusedPort, waitFor } from '../helpers/processes.js';

// Output charges and usage corrections are sent when an answer ends; a next request on another
// worker may be decided before they arrive (the window is the IPC hop). Tests that read those
// exact values run one worker, whose messages reach the primary in order.
const SEQUENTIAL = { workers: 1 };

const EXAMPLE_LIMIT = '    inputTokensPerUnit: 10\n    outputTokensPerUnit: 5000\n    unit: minute';

describe('local token limits over the built router', () => {
  let mock: MockBackend;
  let noUsage: MockBackend;
  beforeAll(async () => {
    [mock, noUsage] = await Promise.all([startMock('pod-a'), startMock('pod-n', ['--no-usage'])]);
  });
  afterAll(async () => {
    await Promise.all([mock?.kill(), noUsage?.kill()]);
  });

  it.each([2, 4])('the documented example with %i workers and a fresh connection per request: 200, 200, 429', async (workers) => {
    const router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }], { rateLimit: EXAMPLE_LIMIT }), { workers });
    try {
      await fetch(`${mock.url}/stats/reset`, { method: 'POST' });
      await awayFromMinuteBoundary();
      const statuses: number[] = [];
      let last = '';
      for (let i = 0; i < 3; i++) {
        const r = await postFresh(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'San Francisco is a', temperature: 0 });
        statuses.push(r.status);
        last = r.text;
        if (i === 2) {
          expect(r.headers['content-type']).toBe('text/plain; charset=utf-8');
          const retry = Number(r.headers['retry-after']);
          expect(retry).toBeGreaterThanOrEqual(1);
          expect(retry).toBeLessThanOrEqual(60);
          expect(r.headers['x-ratelimit-limit-input-tokens']).toBe('10');
          expect(r.headers['x-ratelimit-remaining-input-tokens']).toBe(String(Number(r.headers['x-ratelimit-remaining-input-tokens'])));
        }
      }
      expect(statuses).toEqual([200, 200, 429]);
      expect(last).toBe('input token rate limit exceeded');
      expect((await mock.stats()).requests).toBe(2);
    } finally {
      await router.kill();
    }
  });

  it('a burst of hundreds of concurrent requests never admits more tokens than the limit', async () => {
    // "hello world" is 2 tokens (o200k_base); the backend reports no usage, so no correction.
    const router = await startRouter(resourcesFor([{ name: 'pod-n', port: noUsage.port }], {
      rateLimit: '    inputTokensPerUnit: 301\n    unit: day',
    }), { workers: 2 });
    try {
      await fetch(`${noUsage.url}/stats/reset`, { method: 'POST' });
      const results = await Promise.all(Array.from({ length: 400 }, () =>
        postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'hello world' }).then(async (r) => ({ status: r.status, text: await r.text() }))));
      const ok = results.filter((r) => r.status === 200).length;
      const limited = results.filter((r) => r.status === 429);
      expect(ok).toBe(150); // floor(301 / 2): exact, never more
      expect(limited.length).toBe(250);
      expect(limited.every((r) => r.text === 'input token rate limit exceeded')).toBe(true);
      expect((await noUsage.stats()).requests).toBe(150);
    } finally {
      await router.kill();
    }
  });

  it.each(['true', 'false'])('waves of concurrent requests (RATE_LIMIT_LOCAL_LEASES=%s): exactly floor(limit / tokens) admitted', async (leases) => {
    // Later waves find leases in the workers (when on): they must not change what is admitted.
    const router = await startRouter(resourcesFor([{ name: 'pod-n', port: noUsage.port }], {
      rateLimit: '    inputTokensPerUnit: 1001\n    unit: day',
    }), { workers: 2, env: { RATE_LIMIT_LOCAL_LEASES: leases } });
    try {
      await fetch(`${noUsage.url}/stats/reset`, { method: 'POST' });
      let ok = 0;
      let limited = 0;
      for (let wave = 0; wave < 14; wave++) {
        const statuses = await Promise.all(Array.from({ length: 50 }, () =>
          postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'hello world' }).then(async (r) => {
            await r.text();
            return r.status;
          })));
        ok += statuses.filter((st) => st === 200).length;
        limited += statuses.filter((st) => st === 429).length;
      }
      expect(ok).toBe(500); // floor(1001 / 2)
      expect(limited).toBe(200);
      expect((await noUsage.stats()).requests).toBe(500);
    } finally {
      await router.kill();
    }
  });

  it('a reload that changes the route\'s limit applies to the next request: its headers and its decision', async () => {
    const limit = (n: number): string => `    inputTokensPerUnit: ${n}\n    unit: day`;
    const router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }], { rateLimit: limit(1000) }), { workers: 2 });
    const ask = (): Promise<Response> => postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'San Francisco is a' });
    try {
      const before = await ask();
      await before.text();
      expect(before.status).toBe(200);
      expect(before.headers.get('x-ratelimit-limit-input-tokens')).toBe('1000');
      // 4 input tokens each: a limit of 6 has room for one more request today, not two.
      writeFileSync(router.resourcesFile, resourcesFor([{ name: 'pod-a', port: mock.port }], { rateLimit: limit(6) }));
      await waitFor('the new limit to show', async () => {
        const r = await ask();
        await r.text();
        return r.headers.get('x-ratelimit-limit-input-tokens') === '6';
      }, 5000);
      const after = await ask();
      await after.text();
      expect(after.status).toBe(429);
      expect(after.headers.get('x-ratelimit-limit-input-tokens')).toBe('6');
    } finally {
      await router.kill();
    }
  });

  it('charges all output tokens when the answer ends, then rejects on output until the window resets', async () => {
    const router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }], {
      rateLimit: '    outputTokensPerUnit: 20\n    unit: day',
    }), SEQUENTIAL);
    try {
      const body = { model: 'sf-model', prompt: 'x' };
      const r1 = await postJson(`${router.url}/v1/completions`, body);
      expect(r1.status).toBe(200);
      expect(r1.headers.get('x-ratelimit-limit-output-tokens')).toBe('20');
      expect(r1.headers.get('x-ratelimit-remaining-output-tokens')).toBe('20');
      expect(r1.headers.get('x-ratelimit-limit-input-tokens')).toBeNull(); // only the output limit is set
      await r1.text();
      const r2 = await postJson(`${router.url}/v1/completions`, body);
      expect(r2.status).toBe(200);
      expect(r2.headers.get('x-ratelimit-remaining-output-tokens')).toBe('4');
      await r2.text();
      const r3 = await postJson(`${router.url}/v1/completions`, body);
      expect(r3.status).toBe(429);
      expect(await r3.text()).toBe('output token rate limit exceeded');
      expect(r3.headers.get('x-ratelimit-remaining-output-tokens')).toBe('0');
    } finally {
      await router.kill();
    }
  });

  it('streams carry the headers, and output is counted from the stream usage the router asked for', async () => {
    const router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }], {
      rateLimit: '    inputTokensPerUnit: 1000\n    outputTokensPerUnit: 1000\n    unit: day',
    }), SEQUENTIAL);
    try {
      const s = await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'x', stream: true });
      const text = await s.text();
      // The status and, for an error, its message come first: an answer without the headers is
      // then told apart (refused before the limit decided, or a bug in the headers).
      expect({ status: s.status, limit: s.headers.get('x-ratelimit-limit-input-tokens'), error: s.status === 200 ? '' : text })
        .toEqual({ status: 200, limit: '1000', error: '' });
      expect(text).not.toContain('"usage":{');
      const next = await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'x' });
      expect(next.headers.get('x-ratelimit-remaining-output-tokens')).toBe(String(1000 - 16));
    } finally {
      await router.kill();
    }
  });

  it('the backend usage.prompt_tokens corrects the input counter', async () => {
    // The mock reports prompt_tokens = ceil(chars / 4) = 5 for "San Francisco is a" (BPE counts 4).
    const router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }], {
      rateLimit: '    inputTokensPerUnit: 100\n    unit: day',
    }), SEQUENTIAL);
    try {
      const body = { model: 'sf-model', prompt: 'San Francisco is a' };
      const r1 = await postJson(`${router.url}/v1/completions`, body);
      expect(r1.headers.get('x-ratelimit-remaining-input-tokens')).toBe('96');
      await r1.text();
      const r2 = await postJson(`${router.url}/v1/completions`, body);
      expect(r2.headers.get('x-ratelimit-remaining-input-tokens')).toBe('91'); // 100 - 5 (corrected) - 4
    } finally {
      await router.kill();
    }
  });

  it('an answer that ends in a later window corrects nothing there: the new window admits no more than its limit', async () => {
    // 200 one-letter words: BPE counts 200, the mock reports ceil(399 / 4) = 100. Token-id prompts
    // count their length on both sides (no correction).
    const letters = Array.from({ length: 200 }, (_, i) => String.fromCharCode(97 + (i % 26))).join(' ');
    const router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }], {
      rateLimit: '    inputTokensPerUnit: 300\n    unit: second',
    }), SEQUENTIAL);
    const post = (prompt: unknown, headers: Record<string, string> = {}) => postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt }, headers)
      .then(async (r) => ({ status: r.status, text: await r.text() }));
    const ids = (n: number) => Array.from({ length: n }, (_, i) => i + 1);
    /** Waits until `ms` past the start of a second (at least 100 ms from now). */
    const untilMs = async (ms: number) => {
      const now = Date.now();
      let at = Math.floor(now / 1000) * 1000 + ms;
      while (at < now + 100) at += 1000;
      await new Promise((r) => setTimeout(r, at - now));
    };
    try {
      for (let attempt = 0; ; attempt++) {
        await untilMs(300);
        const admittedIn = Math.floor(Date.now() / 1000);
        // Admitted in this second (200 tokens), answered in the next with its usage (100).
        const a = post(letters, { 'x-mock-latency-ms': '900' });
        await untilMs(50);
        const filled = await post(ids(300)); // the next second: its whole budget
        const first = await a;
        const more = await post(ids(100));
        // A loaded machine may have moved a step past its second: try again.
        if (Math.floor(Date.now() / 1000) !== admittedIn + 1 && attempt < 4) continue;
        expect(first.status).toBe(200);
        expect(filled.status).toBe(200);
        expect(more.status).toBe(429);
        expect(more.text).toBe('input token rate limit exceeded');
        break;
      }
    } finally {
      await router.kill();
    }
  });

  it('input tokens of a request that never reached a pod are given back', async () => {
    const deadPort = await unusedPort();
    const router = await startRouter(resourcesFor([{ name: 'dead-1', port: deadPort }], {
      rateLimit: '    inputTokensPerUnit: 10\n    unit: day',
    }));
    try {
      // Five 4-token prompts against a 10-token limit: without the give-back the third would be 429.
      for (let i = 0; i < 5; i++) {
        const r = await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'San Francisco is a' });
        await r.text();
        expect(r.status).toBe(502);
      }
    } finally {
      await router.kill();
    }
  });

  it('tokens coming back to the window (a lower prompt count from the pod) withdraw the workers\' refusal notes: what fits again is admitted', async () => {
    // The mock takes 1.5 s to answer and reports prompt_tokens = ceil(chars / 4): 5 for a prompt
    // of 18 rare CJK characters that the router counts at 36.
    const slow = await startMock('pod-slow', ['--latency-ms', '1500']);
    const router = await startRouter(resourcesFor([{ name: 'pod-slow', port: slow.port }], {
      rateLimit: '    inputTokensPerUnit: 40\n    unit: day',
    }), { workers: 2 });
    try {
      const big = { model: 'sf-model', prompt: '龘靐齉爩龘靐'.repeat(3) };
      const small = { model: 'sf-model', prompt: 'a b c d e' }; // 5 tokens
      const first = postJson(`${router.url}/v1/completions`, big); // admitted: 36 of 40, answered in 1.5 s
      await new Promise((done) => setTimeout(done, 300));
      // Fresh connections land on either worker: each gets a refusal (36 + 5 > 40) and then
      // refuses from its note.
      for (let i = 0; i < 10; i++) expect((await postFresh(`${router.url}/v1/completions`, small)).status).toBe(429);
      const r = await first;
      expect(r.status).toBe(200);
      expect(r.headers.get('x-ratelimit-remaining-input-tokens')).toBe('4');
      await r.text();
      // The answer's correction (36 -> 5) reaches the primary, which recalls the notes: seven
      // more fit (5 + 7 × 5 = 40), on whichever worker they land.
      await new Promise((done) => setTimeout(done, 300));
      const again = await Promise.all(Array.from({ length: 7 }, () => postFresh(`${router.url}/v1/completions`, small)));
      expect(again.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200, 200]);
    } finally {
      await router.kill();
      await slow.kill();
    }
  });

  it('a prompt larger than the whole input limit is always rejected, the same way whichever worker (and its refusal notes) answers', async () => {
    const router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }], {
      rateLimit: '    inputTokensPerUnit: 3\n    unit: day',
    }), { workers: 2 });
    try {
      const r = await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'San Francisco is a' });
      expect(r.status).toBe(429);
      expect(await r.text()).toBe('input token rate limit exceeded');
      const first = r.headers;
      // Fresh connections land on either worker: the first refusal there is the primary's, the
      // rest come from the worker's refusal note; every answer is the same.
      for (let i = 0; i < 12; i++) {
        const again = await postFresh(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'San Francisco is a' });
        expect(again.status).toBe(429);
        expect(again.text).toBe('input token rate limit exceeded');
        for (const name of ['x-ratelimit-scope', 'x-ratelimit-limit-input-tokens', 'x-ratelimit-remaining-input-tokens', 'x-should-retry', 'content-type']) {
          expect(again.headers[name], name).toBe(first.get(name));
        }
        expect(Math.abs(Number(again.headers['retry-after']) - Number(first.get('retry-after')))).toBeLessThanOrEqual(1);
      }
      expect(first.get('x-should-retry')).toBe('false');
    } finally {
      await router.kill();
    }
  });
});
