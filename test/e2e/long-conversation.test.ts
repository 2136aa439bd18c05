import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { extractPromptText } from '../../src/api/openai-prompt.js';
import { createTokenCounter } from '../../src/tokens/create-token-counter.js';
import { resourcesFor, startLoggedRouter, waitFor } from '../helpers/processes.js';
import { startRecordingPod } from '../helpers/recording-pod.js';
import { mulberry32 } from '../helpers/mulberry32.js';

/**
 * A conversation that grows turn by turn through the built router (one worker, so every turn
 * after the first goes on from one it kept: api/conversation-memo.ts): the pod gets each body as
 * the client sent it, and the access log's input_tokens (the router's own count: the pod reports
 * no usage) is each turn's count of the whole prompt.
 */
describe('a long conversation through the router, real processes', () => {
  let pod: Server;
  let port = 0;
  const received: string[] = [];
  beforeAll(async () => {
    ({ server: pod, port } = await startRecordingPod(received));
  });
  afterAll(async () => {
    pod.closeAllConnections();
    await new Promise<void>((r) => pod.close(() => r()));
  });

  /** inference_router_conversations_total by result, from the router's /metrics. */
  async function conversationsCounted(url: string): Promise<Record<string, number>> {
    const text = await (await fetch(`${url}/metrics`)).text();
    const out: Record<string, number> = {};
    for (const m of text.matchAll(/^inference_router_conversations_total\{result="(\w+)"\} (\d+)$/gm)) out[m[1]] = Number(m[2]);
    return out;
  }

  it.each([
    ['by default', {}, { found: 8, kept: 9 }],
    ['with ROUTER_TOKENIZER_CONVERSATION_BYTES=0: none kept, the same bodies and counts', { ROUTER_TOKENIZER_CONVERSATION_BYTES: '0' }, { found: 0, kept: 0 }],
  ])('forwards each turn as sent and counts each as a whole count does, %s', async (_name, env: Record<string, string>, conversations) => {
    received.length = 0;
    const router = await startLoggedRouter(resourcesFor([{ name: 'pod-a', port }]), { env });
    const counter = createTokenCounter({ estimator: 'bpe', inlineMaxChars: 1e9, poolSize: 0, queue: 64, budgetMs: 200, cacheChars: 0, parseMinBytes: 262_144, conversationBytes: 0 });
    try {
      const rand = mulberry32(99);
      const words = ['order', 'refund {', '"quoted"', '}, {', 'parcel', 'é漢🙂', 'tool_calls', '\\n'];
      const say = (n: number): string => {
        let t = `turn ${n}:`;
        while (t.length < 80 + rand() * 300) t += ` ${words[Math.floor(rand() * words.length)]}`;
        return t;
      };
      const messages: { role: string; content: string }[] = [{ role: 'system', content: `You are helpful. ${'Follow the policy. '.repeat(500)}` }];
      const expected: number[] = [];
      for (let turn = 0; turn < 10; turn++) {
        messages.push({ role: 'user', content: say(turn) });
        const body = JSON.stringify({ model: 'sf-model', messages, temperature: 0, stream: false });
        const r = await fetch(`${router.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        expect(r.status).toBe(200);
        await r.text();
        expect(received.at(-1)).toBe(body);
        expected.push(await counter.countPrompt(extractPromptText(JSON.parse(body) as Record<string, unknown>, 'chat')));
        messages.push({ role: 'assistant', content: say(turn + 100) });
      }
      const records = await waitFor('ten records', () => {
        const lines = readFileSync(router.logFile, 'utf8').split('\n').filter((l) => l.length > 0);
        return lines.length >= 10 ? lines.map((l) => JSON.parse(l) as { input_tokens: number }) : null;
      });
      expect(records.map((r) => r.input_tokens)).toEqual(expected);
      // The first turn (2 messages) is no conversation yet; the second is kept, and each later turn goes on from the one before and is kept.
      expect(await conversationsCounted(router.url)).toEqual(conversations);
    } finally {
      await counter.close();
      await router.kill();
    }
  }, 60_000);
});
