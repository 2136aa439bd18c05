import { Buffer } from 'node:buffer';
import { expect } from 'vitest';
import { SseUsageScanner } from '../../src/api/openai-sse-usage.js';
import { GeneratedTextRecorder } from './generated-text-recorder.js';

// Runs a stream through the usage cut in strip mode (the client did not ask for usage) and checks
// what a client reads and what the router counts.

export const U = '{"prompt_tokens":3,"completion_tokens":42,"total_tokens":45}';
export const HEAD = '"id":"c1","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]';
export const MAX = 1024; // the hold bound of `run`'s scanners: events longer than this are cut as they pass

export interface Run { out: string; prompt: number | null; completion: number | null }

/** The stream through a strip-mode scanner (as the router reads it: with a GeneratedText), pushed in `step`-byte chunks. */
export function run(stream: string, step: number, generated = true): Run {
  const scanner = new SseUsageScanner({ stripUsageChunk: true, maxEventBytes: MAX }, generated ? new GeneratedTextRecorder() : null);
  const bytes = Buffer.from(stream);
  const out: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += step) {
    const piece = Buffer.from(bytes.subarray(at, at + step));
    out.push(Buffer.from(scanner.push(piece)));
    piece.fill(0x21);
  }
  out.push(Buffer.from(scanner.end()));
  const usage = scanner.usage();
  return { out: Buffer.concat(out).toString(), prompt: usage.promptTokens, completion: usage.completionTokens };
}

/** Each event's data as a client reads it (data lines joined with "\n"), parsed when JSON. */
function clientEvents(text: string): unknown[] {
  return text.split(/\r\n\r\n|\n\n|\r\r/).filter((e) => e !== '').map((e) => {
    const data = e.split(/\r\n|\r|\n/).filter((l) => l.startsWith('data')).map((l) => l.replace(/^data:? ?/, '')).join('\n');
    try {
      return JSON.parse(data) as unknown;
    } catch {
      return data;
    }
  });
}

/** What a client must read: the events' JSON without any `usage` member. */
function withoutUsage(text: string): unknown[] {
  return clientEvents(text).map((e) => {
    if (typeof e !== 'object' || e === null) return e;
    const copy = { ...(e as Record<string, unknown>) };
    delete copy.usage;
    return copy;
  });
}

export function checkCut(stream: string, counts: { prompt: number | null; completion: number | null }): void {
  for (const step of [1, 7, 100, 5000, stream.length]) {
    for (const generated of [true, false]) {
      const r = run(stream, step, generated);
      const what = `${JSON.stringify(stream.slice(0, 200))}... in ${step}-byte chunks`;
      expect(clientEvents(r.out), what).toEqual(withoutUsage(stream));
      expect(r.out.includes('usage'), what).toBe(false);
      expect({ prompt: r.prompt, completion: r.completion }, what).toEqual(counts);
    }
  }
}

