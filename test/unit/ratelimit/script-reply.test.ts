import { describe, expect, it } from 'vitest';
import { Buffer } from 'node:buffer';
import { MalformedScriptReplyError, parseScriptReply } from '../../../src/ratelimit/redis/script-reply.js';
import { FIRST_STATUS, REPLY_IN_USED, REPLY_INCARNATION, REPLY_LEASE, REPLY_LEASES_OUT, REPLY_MS, REPLY_OUT_USED, REPLY_RECALL, REPLY_WINDOW } from '../../../src/ratelimit/redis/batch.js';

const bytes = (text: string): Buffer => Buffer.from(text, 'latin1');

describe('parseScriptReply: a limiter script\'s reply string as its numbers', () => {
  it('reads the eight fields in the order batch.ts names them, then one status per admission', () => {
    const reply = parseScriptReply(bytes('53400 1200 345 0 1764288000000 1 640 1764288000123456 0130'), FIRST_STATUS, 4);
    expect(reply).toEqual([53400, 1200, 345, 0, 1764288000000, 1, 640, 1764288000123456, 0, 1, 3, 0]);
    expect([reply[REPLY_MS], reply[REPLY_IN_USED], reply[REPLY_OUT_USED], reply[REPLY_LEASE], reply[REPLY_WINDOW], reply[REPLY_RECALL], reply[REPLY_LEASES_OUT], reply[REPLY_INCARNATION]])
      .toEqual([53400, 1200, 345, 0, 1764288000000, 1, 640, 1764288000123456]);
    expect(FIRST_STATUS).toBe(8);
  });

  it('a batch of settles alone has no status; the largest safe integer and a minus sign are read exactly', () => {
    expect(parseScriptReply(bytes('1 2 3 4 5 6 7 8 '), FIRST_STATUS, 0)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(parseScriptReply(bytes('9007199254740991 0 -5 0 0 0 0 0 2'), FIRST_STATUS, 1)).toEqual([Number.MAX_SAFE_INTEGER, 0, -5, 0, 0, 0, 0, 0, 2]);
  });

  it('reads a view into a larger buffer from its own start, not the buffer\'s', () => {
    const whole = bytes('xxxxx10 20 30 0 40 0 0 0 01yyyy');
    expect(parseScriptReply(whole.subarray(5, whole.length - 4), FIRST_STATUS, 2)).toEqual([10, 20, 30, 0, 40, 0, 0, 0, 0, 1]);
  });

  it.each([
    ['nothing', '', 0, 'field 1 of 8'],
    ['seven fields', '1 2 3 4 5 6 7 ', 0, 'field 8 of 8'],
    ['a field without its space', '1 2 3 4 5 6 7 8', 0, 'field 8 of 8'],
    ['a letter in a field', '1 2 3 4x 5 6 7 8 ', 0, 'field 4 of 8'],
    ['two spaces', '1 2  3 4 5 6 7 8 ', 0, 'field 3 of 8'],
    ['a field of 17 digits', '12345678901234567 2 3 4 5 6 7 8 ', 0, 'field 1 of 8'],
    ['a lone minus sign', '- 2 3 4 5 6 7 8 ', 0, 'field 1 of 8'],
    ['fewer statuses than admissions', '1 2 3 4 5 6 7 8 00', 3, '2 statuses where 3 were asked for'],
    ['more statuses than admissions', '1 2 3 4 5 6 7 8 000', 2, '3 statuses where 2 were asked for'],
    ['a status above 3', '1 2 3 4 5 6 7 8 04', 2, 'status 2 is not a digit from 0 to 3'],
    ['a status that is not a digit', '1 2 3 4 5 6 7 8 0 ', 2, 'status 2 is not a digit from 0 to 3'],
  ])('refuses %s, naming the fault and quoting the reply', (_what, text, admissions, fault) => {
    let err: unknown = null;
    try {
      parseScriptReply(bytes(text), FIRST_STATUS, admissions);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(MalformedScriptReplyError);
    expect((err as Error).message).toContain(fault);
    expect((err as Error).message).toContain(JSON.stringify(text));
  });

  it('reads the admit-all script\'s reply: four fields a limit, then a status a limit for each admission', () => {
    // Two limits, two admissions: the second refused by the tenant's input limit.
    expect(parseScriptReply(bytes('100 7 0 0 86400000 5 9 0 0001'), 8, 4)).toEqual([100, 7, 0, 0, 86400000, 5, 9, 0, 0, 0, 0, 1]);
    expect(() => parseScriptReply(bytes('100 7 0 0 86400000 5 9 0 000'), 8, 4)).toThrow('3 statuses where 4 were asked for');
  });

  it('refuses a reply that is not a string (an array, as another version of a script may answer)', () => {
    expect(() => parseScriptReply([1, 2, 3] as unknown as Uint8Array, FIRST_STATUS, 0)).toThrow(new MalformedScriptReplyError('expected a string, got an array of 3'));
    expect(() => parseScriptReply(7 as unknown as Uint8Array, FIRST_STATUS, 0)).toThrow('expected a string, got number');
  });

  it('quotes at most 120 bytes of a long reply', () => {
    const text = `1 2 3 4 5 6 7 8 ${'0'.repeat(200)}`;
    expect(() => parseScriptReply(bytes(text), FIRST_STATUS, 3)).toThrow(JSON.stringify(`${text.slice(0, 120)}...`));
  });
});
