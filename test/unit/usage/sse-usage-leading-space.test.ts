import { describe, expect, it } from 'vitest';
import { SseUsageScanner } from '../../../src/api/openai-sse-usage.js';
import { GeneratedTextRecorder } from '../../helpers/generated-text-recorder.js';

/**
 * An event's data may start with JSON white space before its object: `data:  {` (a second space
 * is part of the value), a tab, or a first data line left empty (the data then starts with "\n").
 * A client's JSON parser reads such data as the object; so does the usage reader, and in strip
 * mode the usage is removed as from any other event.
 */

const USAGE = '{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}';
const CONTENT = '{"id":"c1","choices":[{"index":0,"delta":{"content":"hi"}}]}';

function run(stream: string, strip: boolean, generated: GeneratedTextRecorder | null = null): { out: string; scanner: SseUsageScanner } {
  const scanner = new SseUsageScanner({ stripUsageChunk: strip }, generated);
  const out = Buffer.concat([scanner.push(Buffer.from(stream)), scanner.end()]).toString();
  return { out, scanner };
}

describe('SseUsageScanner: data with white space before its object', () => {
  const leads = ['data:  ', 'data:\t', 'data: \r\ndata: ', 'data:\ndata:'];
  for (const lead of leads) {
    it(`reads and removes the usage chunk (${JSON.stringify(lead)})`, () => {
      const stream = `data: ${CONTENT}\n\n${lead}{"id":"c1","choices":[],"usage":${USAGE}}\n\ndata: [DONE]\n\n`;
      for (const generated of [null, new GeneratedTextRecorder()]) {
        const { out, scanner } = run(stream, true, generated);
        expect(scanner.completionTokens).toBe(2);
        expect(scanner.promptTokens).toBe(9);
        expect(out).toBe(`data: ${CONTENT}\n\ndata: [DONE]\n\n`);
      }
    });

    it(`reads the usage and cuts it from a content chunk (${JSON.stringify(lead)})`, () => {
      const stream = `${lead}{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":${USAGE}}\n\n`;
      const { out, scanner } = run(stream, true);
      expect(scanner.completionTokens).toBe(2);
      expect(out).toBe(`${lead}{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n`);
      expect(run(stream, false).scanner.completionTokens).toBe(2);
    });
  }
});
