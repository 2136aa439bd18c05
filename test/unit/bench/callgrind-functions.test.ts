import { describe, expect, test } from 'vitest';
import { addMapped, functionKey, largest, PerfMap, selfCostByFunction } from '../../../bench/callgrind-functions.js';

const DUMP = [
  'version: 1',
  'events: Ir',
  'fl=(1) /lib/x.so',
  'fn=(1) parse',
  '10 100',
  '+2 5',
  'cfl=(1)',
  'cfn=(2) 0x00000000000010a0',
  'calls=3 0x10a0',
  '12 900', // inclusive cost of the calls: not parse's own
  '13 7',
  'fn=(2)',
  '* 40',
  'fn=(3) 0x0000000000002004',
  '0 11',
  'fn=(1)',
  '-1 3',
  'totals: 1066',
  '',
].join('\n');

describe('callgrind functions', () => {
  test('self cost per function: compressed names, relative positions, call costs left out', () => {
    const c = selfCostByFunction(DUMP);
    expect(Object.fromEntries(c)).toEqual({ parse: 115, '0x00000000000010a0': 40, '0x0000000000002004': 11 });
  });

  test('perf map: addresses inside an entry get its name; a later entry at the same start wins', () => {
    const m = new PerfMap('1000 100 JS:~old /t/a.js:1:1\n1000 c0 JS:*new /t/a.js:1:1\n2000 4 Builtin:Foo\nnot a line\n');
    expect(m.name('0x00000000000010a0')).toBe('JS:*new /t/a.js:1:1');
    expect(m.name('0x00000000000010c0')).toBe('0x00000000000010c0'); // past the newer entry's end
    expect(m.name('0x0000000000002003')).toBe('Builtin:Foo');
    expect(m.name('0x0000000000002004')).toBe('0x0000000000002004');
    expect(m.name('parse')).toBe('parse');
  });

  test('mapped costs add up by name, the tree cut out; largest orders by size, or by difference from a base', () => {
    const m = new PerfMap('10a0 10 JS:*f file:///t/b/dist/x.js:1:1\n');
    const into = new Map<string, number>();
    addMapped(into, selfCostByFunction(DUMP), m, '/t/b');
    addMapped(into, new Map([['0x00000000000010a2', 2]]), m, '/t/b');
    expect(Object.fromEntries(into)).toEqual({ parse: 115, 'JS:*f file://dist/x.js': 42, '0x0000000000002004': 11 });
    expect(largest(into, 2)).toEqual([['parse', 115], ['JS:*f file://dist/x.js', 42]]);
    const base = new Map([['parse', 15], ['gone', 60]]);
    expect(largest(into, 3, base)).toEqual([['parse', 100], ['gone', -60], ['JS:*f file://dist/x.js', 42]]);
  });

  test('a named function keeps its name without its line (lines move between builds); an anonymous one keeps its place', () => {
    expect(functionKey('JS:*scanHead file://dist/upstream/http1/head-lines.js:44:25')).toBe('JS:*scanHead file://dist/upstream/http1/head-lines.js');
    expect(functionKey('JS:~#count file://dist/tokens/create-token-counter.js:68:11')).toBe('JS:~#count file://dist/tokens/create-token-counter.js');
    expect(functionKey('JS:* file://dist/http/inference-front.js:17:12')).toBe('JS:* file://dist/http/inference-front.js:17:12');
    expect(functionKey('JS:*onStreamRead node:internal/stream_base_commons:168:22')).toBe('JS:*onStreamRead node:internal/stream_base_commons');
    expect(functionKey('Builtins_TypedArrayPrototypeSet')).toBe('Builtins_TypedArrayPrototypeSet');
    expect(functionKey('RegExp:[^\\r\\n]+ x:1:2')).toBe('RegExp:[^\\r\\n]+ x:1:2');
    // two builds whose lines moved add up under one key
    const m = new PerfMap('10a0 10 JS:*f file:///t/a/dist/x.js:1:1\n10b0 10 JS:*f file:///t/a/dist/x.js:3:1\n');
    const into = new Map<string, number>();
    addMapped(into, new Map([['0x00000000000010a0', 5], ['0x00000000000010b0', 7]]), m, '/t/a');
    expect(Object.fromEntries(into)).toEqual({ 'JS:*f file://dist/x.js': 12 });
  });
});
