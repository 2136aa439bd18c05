import { describe, expect, it } from 'vitest';
import { collectedPid, collectedTotal, perCall } from '../../../bench/call-instructions.js';
import { CALLS } from '../../../bench/call-instructions-cases.js';

/** Where the usage object starts in the cases' answer (after `,"usage":`). */
const USAGE_AT = 62;

describe('call-instructions', () => {
  it('reads callgrind\'s total and takes the difference per call', () => {
    expect(collectedTotal('==12== Events    : Ir\n==12== Collected : 123456789\n==12==\n==12== I   refs:      123,456,789')).toBe(123456789);
    expect(collectedTotal('valgrind: failed to start')).toBeNull();
    expect(collectedPid('==12== Events    : Ir\n==12== Collected : 123456789\n')).toBe(12);
    expect(collectedPid('valgrind: failed to start')).toBeNull();
    // 1,000 calls: 5 M at start-up plus 1,500 a call; 3,000 calls: the same start-up
    expect(perCall(5_000_000 + 1_500 * 1_000, 5_000_000 + 1_500 * 3_000, 1_000)).toBe(1_500);
  });

  it('every case runs and returns a number; the answer head forwards two of its five headers', () => {
    for (const [name, call] of Object.entries(CALLS)) expect(typeof call(), name).toBe('number');
    expect(CALLS['answer head: cut names']()).toBe(10);
    expect(CALLS['answer head: cut names and forward decisions']()).toBe(2); // content-type, x-mock-pod
    expect(CALLS['readFlatCountsBackwards of the usage object']()).toBe(USAGE_AT);
    expect(CALLS.newRequestId()).toBe(36);
    expect(CALLS['read kept: Buffer.from of a subarray']()).toBe(460);
    expect(CALLS['body chunk: a Uint8Array of the ArrayBuffer then set']()).toBe(120);
  });

  it('no case name holds a comma (--only splits its list on commas)', () => {
    for (const name of Object.keys(CALLS)) expect(name).not.toContain(',');
  });
});
