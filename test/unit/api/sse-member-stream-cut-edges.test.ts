import { describe, it } from 'vitest';
import { HOLD_BYTES, VALUE_BYTES } from '../../../src/api/sse-member-stream-cut.js';
import { expect } from 'vitest';
import { checkCut, HEAD, MAX, run, U } from '../../helpers/sse-usage-cut.js';

// The usage cut of an event past the hold bound (cut as it passes): a usage key however far after
// its comma, a usage value however large.

const BIG = 'y'.repeat(2 * MAX); // makes an event longer than the bound

describe('the usage cut past the hold bound', () => {
  const past = (between: string, before = `${HEAD},"big":"${BIG}"`): string =>
    `data: {${before},${between}"usage":${U}}\n\ndata: [DONE]\n\n`;
  const POD = { prompt: 3, completion: 42 };

  it('a usage key after more than HOLD_BYTES of white space after a comma is cut and read', () => {
    checkCut(past(' '.repeat(HOLD_BYTES + 10)), POD);
    checkCut(past('\t'.repeat(HOLD_BYTES - 3)), POD); // the bound reached within the key
    checkCut(past(' '.repeat(3 * HOLD_BYTES), `"big":"${BIG}","a":1`), POD);
  });

  it('... or after more than HOLD_BYTES of lines (empty data lines, comments, other fields)', () => {
    checkCut(past('\ndata:'.repeat(HOLD_BYTES)), POD);
    checkCut(past(`\n: ${'c'.repeat(2 * HOLD_BYTES)}\nid: 5\ndata: `), POD);
    checkCut(past(`\r\n: ${'c'.repeat(2 * HOLD_BYTES)}\r\ndata:`).replaceAll('\n\n', '\r\n\r\n'), POD);
  });

  it('a usage member after a cut first one and more than HOLD_BYTES of white space is cut', () => {
    checkCut(`data: {"usage":{"completion_tokens":1}${' '.repeat(HOLD_BYTES + 1)},"big":"${BIG}","usage":${U}}\n\ndata: [DONE]\n\n`, POD);
    checkCut(`data: {"usage":1${' '.repeat(HOLD_BYTES + 1)},"usage":${U},"big":"${BIG}"}\n\ndata: [DONE]\n\n`, POD);
  });

  it('a member that is not usage after more than HOLD_BYTES of white space stays, and so does the JSON', () => {
    const stream = `data: {"usage":${U},"big":"${BIG}",${' '.repeat(2 * HOLD_BYTES)}"usagf":1,${' '.repeat(HOLD_BYTES)}"${'k'.repeat(2 * HOLD_BYTES)}":2}\n\ndata: [DONE]\n\n`;
    checkCut(stream, POD);
  });

  it('a usage value over VALUE_BYTES is cut and its counts read', () => {
    const big = `{"prompt_tokens":3,"pad":"${'p'.repeat(VALUE_BYTES)}","nested":{"completion_tokens":7,"a":[${'1,'.repeat(VALUE_BYTES)}2]},"completion_tokens":42}`;
    checkCut(`data: {"big":"${BIG}","usage":${big},${HEAD}}\n\ndata: [DONE]\n\n`, POD);
  });

  it('a malformed usage value past the bound is not read: white space between two digits does not join them', () => {
    for (const usage of ['{"prompt_tokens":3,"completion_tokens":4 2}', '{"prompt_tokens":3 ,"completion_tokens":4\t \t2}', '{"prompt_tokens":tr ue}']) {
      const stream = `data: {"big":"${BIG}","usage":${usage},${HEAD}}\n\ndata: [DONE]\n\n`;
      for (const step of [1, 7, 100, stream.length]) {
        const r = run(stream, step);
        expect({ prompt: r.prompt, completion: r.completion }, `${usage} in ${step}-byte chunks`).toEqual({ prompt: null, completion: null });
      }
    }
    // White space between other tokens is no harm, however long.
    checkCut(`data: {"big":"${BIG}","usage":{ "prompt_tokens" :${' '.repeat(VALUE_BYTES)}3 ,\t"completion_tokens": 42 } ,${HEAD}}\n\ndata: [DONE]\n\n`, POD);
  });
});
