import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { MergeCounter } from '../../../src/tokens/merge-count.js';
import { buildO200kTable, o200kRanks, o200kRanksFile } from '../../../src/tokens/o200k-ranks.js';
import { NO_RANK, RankTable } from '../../../src/tokens/rank-table.js';
import { compiledTaskFile, removeCompiled } from './compiled-task.js';

const b64 = (s: string | number[]): string => Buffer.from(typeof s === 'string' ? Buffer.from(s, 'latin1') : Uint8Array.from(s)).toString('base64');
const tiktoken = (entries: readonly (readonly [string | number[], number])[]): Buffer =>
  Buffer.from(entries.map(([bytes, rank]) => `${b64(bytes)} ${rank}\n`).join(''), 'latin1');
const bytes = (s: string): Uint8Array => Buffer.from(s, 'latin1');

/** a b c and the merges ab (rank 3), bc (4), abc (5), cc (6); one sequence that is not UTF-8. */
const SMALL = tiktoken([['a', 0], ['b', 1], ['c', 2], ['ab', 3], ['bc', 4], ['abc', 5], ['cc', 6], [[0xff, 0xfe], 7]]);

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  removeCompiled();
});

describe('rank table', () => {
  it('finds each sequence by its bytes, where they stand in a buffer, and nothing else', () => {
    const t = RankTable.fromTiktoken(SMALL, 'small.tiktoken');
    expect(t.entries).toBe(8);
    expect(t.rankOfBytes(bytes('xabcx'), 1, 4)).toBe(5);
    expect(t.rankOfBytes(bytes('cc'), 0, 2)).toBe(6);
    expect(t.rankOfBytes(Uint8Array.from([0xff, 0xfe]), 0, 2)).toBe(7);
    expect(t.rankOfBytes(bytes('ac'), 0, 2)).toBe(NO_RANK);
    expect(t.rankOfBytes(bytes('abcc'), 0, 4)).toBe(NO_RANK);
    expect(t.rankOfBytes(bytes('zzabz'), 2, 4)).toBe(3);
    expect(t.rankOfBytes(bytes('ca'), 0, 2)).toBe(NO_RANK);
  });

  it('over the same shared buffer, another table answers the same (what a tokenizer thread is handed)', () => {
    const t = RankTable.fromTiktoken(SMALL, 'small.tiktoken');
    const u = RankTable.fromShared(t.shared);
    for (const s of ['a', 'b', 'ab', 'bc', 'abc', 'cc', 'ba', 'abcabc']) expect(u.rankOfBytes(bytes(s), 0, s.length)).toBe(t.rankOfBytes(bytes(s), 0, s.length));
    expect(() => RankTable.fromShared(new SharedArrayBuffer(64))).toThrow('not a rank table');
  });

  it('merges the lowest-ranked pair first, leftmost among equals, and counts the parts left', () => {
    const t = RankTable.fromTiktoken(SMALL, 'small.tiktoken');
    const m = new MergeCounter(t);
    const count = (s: string): number => m.count(bytes(s), 0, s.length);
    expect(count('abc')).toBe(1); // ab (3) first, then ab+c = abc (5)
    expect(count('bcc')).toBe(2); // bc (4) before cc (6): bc | c, and "bcc" is no sequence
    expect(count('ccc')).toBe(2); // the leftmost cc: cc | c
    expect(count('cab')).toBe(2); // c | ab
    expect(count('x')).toBe(1);
    expect(count('')).toBe(0);
    // Longer than the scratch arrays it starts with: they grow.
    expect(count('ab'.repeat(300))).toBe(300);
    // A range inside a longer buffer is merged alone: its neighbours' bytes take no part.
    const around = bytes('cabccab');
    expect(m.count(around, 1, 4)).toBe(1); // abc
    expect(m.count(around, 2, 5)).toBe(2); // bc | c
    expect(m.count(around, 4, 7)).toBe(2); // c | ab
  });

  it('refuses a malformed file, naming the file and the line', () => {
    expect(() => RankTable.fromTiktoken(Buffer.from('YQ== 0\nYg== x\n'), 'bad.tiktoken')).toThrow('bad.tiktoken:2: expected "base64 rank", got "Yg== x"');
    expect(() => RankTable.fromTiktoken(Buffer.from('YQ== 0\nY*== 1\n'), 'bad.tiktoken')).toThrow('bad.tiktoken:2:');
    expect(() => RankTable.fromTiktoken(Buffer.from('YQ==0\n'), 'bad.tiktoken')).toThrow('bad.tiktoken:1:');
    expect(() => RankTable.fromTiktoken(Buffer.from('YQ== 0\nYQ== 1\n'), 'dup.tiktoken')).toThrow('dup.tiktoken:2: this byte sequence is already listed');
    // The last line may lack its line feed.
    expect(RankTable.fromTiktoken(Buffer.from('YQ== 0\nYg== 1'), 'ok.tiktoken').rankOfBytes(bytes('b'), 0, 1)).toBe(1);
  });

  it('names the ranks file a missing package would have held', () => {
    expect(() => o200kRanksFile('gpt-tokenizer/data/no_such_base.tiktoken'))
      .toThrow('cannot find the token ranks file gpt-tokenizer/data/no_such_base.tiktoken (is the gpt-tokenizer package installed?)');
  });

  it('names the file it cannot read', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ir-ranks-'));
    dirs.push(dir);
    expect(() => buildO200kTable(join(dir, 'missing.tiktoken'))).toThrow(`cannot read the token ranks file ${join(dir, 'missing.tiktoken')}`);
    writeFileSync(join(dir, 'small.tiktoken'), SMALL);
    expect(buildO200kTable(join(dir, 'small.tiktoken')).table.entries).toBe(8);
  });

  it("holds o200k_base's 199 998 sequences from gpt-tokenizer's data file in about 5 MB", () => {
    expect(o200kRanksFile()).toMatch(/gpt-tokenizer[\\/]data[\\/]o200k_base\.tiktoken$/);
    const t = o200kRanks();
    expect(t.entries).toBe(199_998);
    expect(t.shared.byteLength).toBeLessThan(6_000_000);
    expect(t.rankOfBytes(bytes('!'), 0, 1)).toBe(0);
    expect(t.rankOfBytes(bytes(' Francisco'), 0, 10)).not.toBe(NO_RANK);
  });

  it('a thread handed a table counts with it and builds none of its own', async () => {
    compiledTaskFile();
    const bpeCount = pathToFileURL(compiledTaskFile().replace(/tokenize-task\.js$/, 'bpe-count.js')).href;
    // A table of single letters only: with it "hello world" is 11 tokens; with o200k_base it is 2.
    const letters = RankTable.fromTiktoken(tiktoken([...'abcdefghijklmnopqrstuvwxyz '].map((c, i) => [c, i] as const)), 'letters.tiktoken');
    const code = `const { parentPort } = require('node:worker_threads');
      import(${JSON.stringify(bpeCount)}).then((m) => parentPort.postMessage(m.countPlain('hello world')), (e) => parentPort.postMessage(String(e)));`;
    const counted = await new Promise((resolve, reject) => {
      const w = new Worker(code, { eval: true, workerData: { o200kRanks: letters.shared } });
      w.once('message', (v) => { resolve(v); void w.terminate(); });
      w.once('error', reject);
    });
    expect(counted).toBe(11);
  });
});
