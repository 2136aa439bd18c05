import { describe, expect, it } from 'vitest';
import { accessLogRecords, waitFor } from '../helpers/processes.js';
import { routerOnRecordingPod } from '../helpers/recording-pod.js';

// An agent's tools (about 2 KB), sent as an SDK writes them, pretty-printed, and with the key
// spelled with an escape (which the router does not look for by its bytes: it parses such a body whole).
const TOOLS = Array.from({ length: 6 }, (_, i) => ({
  type: 'function',
  function: {
    name: `lookup_${i}`,
    description: `Looks up records of kind ${i} by identifier; use it before answering "questions" about them. é`,
    parameters: { type: 'object', properties: { id: { type: 'string' }, limit: { type: 'integer', minimum: 1 } }, required: ['id'] },
  },
}));
const SYSTEM = 'You are the assistant of a parcel service. Answer briefly.';

function compact(i: number): string {
  return JSON.stringify({ model: 'sf-model', messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: `Where is parcel ${i}?` }], tools: TOOLS });
}
function toolsFirstPretty(i: number): string {
  return JSON.stringify({ tools: TOOLS, model: 'sf-model', messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: `Where is parcel ${i}?` }] }, null, 2);
}
function escapedKey(i: number): string {
  return compact(i).replace('"tools"', '"\\u0074ools"');
}

describe('tool definitions read by their bytes (built router, real pod)', () => {
  const pod = routerOnRecordingPod();

  it('counts the same input tokens whether the tools were parsed or found by their bytes, and forwards the bytes as sent', async () => {
    // Each shape twice: the first of a shape reads new bytes, the second finds them.
    const sent = [compact(1), compact(2), toolsFirstPretty(1), toolsFirstPretty(2), escapedKey(1), escapedKey(2)];
    for (const body of sent) {
      const r = await fetch(`${pod.router.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      expect(r.status).toBe(200);
      await r.text();
    }
    expect(pod.received).toEqual(sent);
    const recs = await waitFor('access-log records', () => {
      const all = accessLogRecords(pod.router.logFile);
      return all.length >= sent.length ? all : null;
    });
    const tokens = recs.map((r: { input_tokens: number }) => r.input_tokens);
    // The same question number: the same prompt, whatever the shape of the body.
    expect(tokens[2]).toBe(tokens[0]);
    expect(tokens[4]).toBe(tokens[0]);
    expect(tokens[3]).toBe(tokens[1]);
    expect(tokens[5]).toBe(tokens[1]);
    // The tools' text is counted: far more than the messages alone.
    expect(tokens[0]).toBeGreaterThan(JSON.stringify(TOOLS).length / 6);
  });
});
