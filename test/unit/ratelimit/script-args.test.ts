/**
 * ScriptArgs: a script call's RESP bytes, written into one reused buffer. Read back with a strict
 * RESP reader, every argument is the text ioredis wrote for it before (String(n) for a number,
 * UTF-8 for a string), behind EVALSHA, the script's SHA1 and the key count.
 */
import { Buffer } from 'node:buffer';
import { describe, expect, it } from 'vitest';
import { ScriptArgs } from '../../../src/ratelimit/redis/script-args.js';
import { LimiterScript } from '../../../src/ratelimit/redis/script-command.js';
import { bulkStrings } from '../../helpers/resp-bulk.js';

const SCRIPT = new LimiterScript('return ARGV[1]');

describe('ScriptArgs', () => {
  it('writes EVALSHA, the SHA1, the key count, the keys and the arguments as bulk strings', () => {
    const call = new ScriptArgs().begin().key('ir:{default/r}').str('minute').str('').num(12).call(SCRIPT);
    expect(bulkStrings(call.bytes)).toEqual(['evalsha', SCRIPT.sha, '1', 'ir:{default/r}', 'minute', '', '12']);
    expect(call.argc).toBe(7);
    expect(call.keys).toEqual(['ir:{default/r}']);
    expect(SCRIPT.sha).toMatch(/^[0-9a-f]{40}$/);
  });

  it('writes every number as String(n) does', () => {
    const numbers = [0, 7, 10, 99, 123456789, 999_999_999, 1_000_000_000, 2 ** 31, Number.MAX_SAFE_INTEGER, 1e12, 1e21,
      -1, -10, -999_999_999, -1_000_000_000, -(2 ** 40), 0.5, -0.25, 1.5e-7, Number.NaN, Number.POSITIVE_INFINITY, -0];
    const a = new ScriptArgs().begin().key('k');
    for (const n of numbers) a.num(n);
    expect(bulkStrings(a.call(SCRIPT).bytes).slice(4)).toEqual(numbers.map((n) => String(n)));
  });

  it('writes strings as UTF-8 with their length in bytes', () => {
    // Around the short strings' loop (up to 64 characters): lengths of one and two digits, ASCII
    // text and text with a character outside ASCII at its start or its end, then longer ones.
    const strings = ['', 'a', 'é', 'ключ', '🙂 tenant', 'abcdefghi', 'abcdefghij', 'x'.repeat(63) + 'é', 'y'.repeat(64), 'z'.repeat(65), 'x'.repeat(300)];
    const a = new ScriptArgs().begin().key('ir:{tenant/é}');
    for (const s of strings) a.str(s);
    const call = a.call(SCRIPT);
    expect(bulkStrings(call.bytes)).toEqual(['evalsha', SCRIPT.sha, '1', 'ir:{tenant/é}', ...strings]);
    // Text outside ASCII makes the call a Buffer of its UTF-8 bytes.
    expect(Buffer.isBuffer(call.bytes)).toBe(true);
    expect((call.bytes as Buffer).includes(Buffer.from('$8\r\nключ\r\n', 'utf8'))).toBe(true);
  });

  it('an ASCII call is a string of its bytes, one character each, which a socket writes unchanged', () => {
    const call = new ScriptArgs().begin().key('ir:{default/r}').str('day').num(-1).call(SCRIPT);
    expect(typeof call.bytes).toBe('string');
    const text = call.bytes as string;
    expect(Buffer.from(text, 'utf8').equals(Buffer.from(text, 'latin1'))).toBe(true);
    expect(bulkStrings(text)).toEqual(['evalsha', SCRIPT.sha, '1', 'ir:{default/r}', 'day', '-1']);
  });

  it('several keys, and a key count of two digits, come before the arguments', () => {
    const keys = Array.from({ length: 12 }, (_, i) => `ir:{k${i}}`);
    const a = new ScriptArgs().begin();
    for (const k of keys) a.key(k);
    const call = a.str('now').nums([1, 2, 3]).call(SCRIPT);
    expect(bulkStrings(call.bytes)).toEqual(['evalsha', SCRIPT.sha, '12', ...keys, 'now', '1', '2', '3']);
    expect(call.keys).toEqual(keys);
  });

  it('a call larger than its first buffer (500 admissions of large counts) is whole', () => {
    const tokens = Array.from({ length: 500 }, (_, i) => 1_000_000_000_000 + i);
    const call = new ScriptArgs().begin().key('k').str('x'.repeat(5000)).nums(tokens).call(SCRIPT);
    const strings = bulkStrings(call.bytes);
    expect(strings.length).toBe(3 + 1 + 1 + 500);
    expect(strings[4]).toBe('x'.repeat(5000));
    expect(strings.slice(5)).toEqual(tokens.map(String));
  });

  it('each call has bytes of its own: the next call on the same writer leaves them as they were', () => {
    const a = new ScriptArgs();
    const first = a.begin().key('first').num(1).call(SCRIPT);
    const utf8 = a.begin().key('é').num(1).call(SCRIPT);
    const copy = Buffer.from(utf8.bytes as Buffer);
    const second = a.begin().key('second-key').num(22).str('more').call(SCRIPT);
    expect((utf8.bytes as Buffer).equals(copy)).toBe(true);
    expect(bulkStrings(utf8.bytes)).toEqual(['evalsha', SCRIPT.sha, '1', 'é', '1']);
    expect(bulkStrings(first.bytes)).toEqual(['evalsha', SCRIPT.sha, '1', 'first', '1']);
    expect(bulkStrings(second.bytes)).toEqual(['evalsha', SCRIPT.sha, '1', 'second-key', '22', 'more']);
  });

  it('the EVAL form carries the script\'s text in place of its SHA1, the rest unchanged', () => {
    const lua = 'local x = "é"\nreturn ARGV[1]';
    const script = new LimiterScript(lua);
    const call = new ScriptArgs().begin().key('k').num(-5).str('é').call(script);
    expect(bulkStrings(script.evalForm(call))).toEqual(['eval', lua, '1', 'k', '-5', 'é']);
  });
});
