import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { extractPromptText } from '../../src/api/openai-prompt.js';
import { createTokenCounter } from '../../src/tokens/create-token-counter.js';
import { waitFor } from '../helpers/processes.js';
import { routerOnRecordingPod } from '../helpers/recording-pod.js';

/** An agent's system prompt of about 6 KB, with the escapes such prompts carry (new lines, quotes, non-ASCII). */
const SYSTEM = Array.from({ length: 60 }, (_, i) => `${i + 1}. Answer "briefly"; cite policy ${100 + i} — é ✓\n`).join('');

const compact = (i: number): string =>
  JSON.stringify({ model: 'sf-model', messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: `Where is parcel ${i}?` }] });
// As Python's json.dumps writes it: a space after each colon and comma, non-ASCII escaped.
const python = (i: number): string =>
  JSON.stringify({ model: 'sf-model', messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: `Where is parcel ${i}?` }] }, null, 0)
    .replace(/":/g, '": ').replace(/—/g, '\\u2014').replace(/é/g, '\\u00e9').replace(/✓/g, '\\u2713');

/**
 * Agent turns with one system prompt through the built router (one worker): the pod gets each body
 * as sent, the access log's input_tokens (the router's own count: the pod reports no usage) is a
 * whole count of each prompt, and /metrics shows the prompt kept once per shape and read by its
 * bytes after that.
 */
describe('system prompts read by their bytes (built router, real pod)', () => {
  const pod = routerOnRecordingPod();

  it('counts each turn as a whole count does, forwards the bytes as sent, and reads the prompt by its bytes after the first of each shape', async () => {
    const sent = [compact(1), compact(2), compact(3), python(1), python(2)];
    for (const body of sent) {
      const r = await fetch(`${pod.router.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      expect(r.status).toBe(200);
      await r.text();
    }
    expect(pod.received).toEqual(sent);
    const counter = createTokenCounter({ estimator: 'bpe', inlineMaxChars: 1e9, poolSize: 0, queue: 64, budgetMs: 200, cacheChars: 0, parseMinBytes: 262_144, conversationBytes: 0 });
    const expected: number[] = [];
    for (const body of sent) expected.push(await counter.countPrompt(extractPromptText(JSON.parse(body) as Record<string, unknown>, 'chat')));
    await counter.close();
    const records = await waitFor('five records', () => {
      const lines = readFileSync(pod.router.logFile, 'utf8').split('\n').filter((l) => l.length > 0);
      return lines.length >= sent.length ? lines.map((l) => JSON.parse(l) as { input_tokens: number }) : null;
    });
    expect(records.map((r) => r.input_tokens)).toEqual(expected);
    // The same question: the same count, whatever the shape.
    expect(expected[3]).toBe(expected[0]);
    const text = await (await fetch(`${pod.router.url}/metrics`)).text();
    const counted: Record<string, number> = {};
    for (const m of text.matchAll(/^inference_router_system_prompts_total\{result="(\w+)"\} (\d+)$/gm)) counted[m[1]] = Number(m[2]);
    // Each shape's bytes differ: the first body of each keeps them, the others find them.
    expect(counted).toEqual({ found: 3, kept: 2 });
  });
});
