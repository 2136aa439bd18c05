import { describe, expect, it } from 'vitest';
import { checkCut, HEAD, run, U } from '../../helpers/sse-usage-cut.js';

// The usage cut of an event within the hold bound: every usage member goes when one is set (to
// anything but null); "usage": null alone stays.

describe('the usage cut within the hold bound', () => {
  it('a usage member that is not an object (true, a number, a string, an array) is cut and not counted', () => {
    for (const usage of ['true', 'false', '42', '-1.5e3', '"42 tokens"', '[3,42]', '[]', '"{\\"completion_tokens\\":42}"']) {
      checkCut(`data: {${HEAD},"usage":${usage}}\n\ndata: [DONE]\n\n`, { prompt: null, completion: null });
      checkCut(`data: {"usage":${usage},${HEAD}}\n\ndata: [DONE]\n\n`, { prompt: null, completion: null });
      checkCut(`data: {"choices":[],"usage":${usage}}\n\ndata: [DONE]\n\n`, { prompt: null, completion: null });
    }
  });

  it('a usage member spelled with escapes and set, beside a plain "usage": null: every usage member is cut', () => {
    for (const escaped of ['\\u0075sage', 'us\\u0061ge', 'usag\\u0065']) {
      // A parser keeps the last: null, so nothing is counted from the pod.
      checkCut(`data: {${HEAD},"${escaped}":${U},"usage":null}\n\ndata: [DONE]\n\n`, { prompt: null, completion: null });
      checkCut(`data: {"usage":null,${HEAD},"${escaped}":${U}}\n\ndata: [DONE]\n\n`, { prompt: 3, completion: 42 });
      checkCut(`data: {"usage":null,"${escaped}":true,${HEAD}}\n\ndata: [DONE]\n\n`, { prompt: null, completion: null });
    }
  });

  it('"usage": null alone, in any spelling, is forwarded as it came', () => {
    for (const stream of [
      `data: {${HEAD},"usage":null}\n\ndata: [DONE]\n\n`,
      `data: {${HEAD},"\\u0075sage":null}\n\ndata: [DONE]\n\n`,
      `data: {${HEAD},"usage":null,"\\u0075sage":null,"x":"\\u0065"}\n\ndata: [DONE]\n\n`,
      `data: {${HEAD},"usage":null,"x":{"usage":1}}\n\ndata: [DONE]\n\n`,
    ]) {
      for (const generated of [true, false]) expect(run(stream, 5, generated).out).toBe(stream);
    }
  });
});
