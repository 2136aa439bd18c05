/**
 * The rank table kept in a file (src/tokens/rank-table-file.ts): read back byte for byte as it
 * was built, and refused (null: the caller builds the table from its source) when the file is
 * missing, of another source, cut short, changed anywhere, or not such a file. And the file the
 * build writes beside the built code holds o200k_base's table exactly as built from
 * gpt-tokenizer's `.tiktoken` file, which the built module then reads instead of building.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildO200kTable, o200kRanksFile } from '../../../src/tokens/o200k-ranks.js';
import { RankTable } from '../../../src/tokens/rank-table.js';
import { readRankTableFile, sourceDigest, writeRankTableFile } from '../../../src/tokens/rank-table-file.js';
import { builtFile } from '../../helpers/built-file.js';


const tiktoken = (entries: readonly (readonly [string, number])[]): Buffer =>
  Buffer.from(entries.map(([s, r]) => `${Buffer.from(s, 'latin1').toString('base64')} ${r}\n`).join(''));
const SOURCE = tiktoken([['a', 0], ['b', 1], ['c', 2], ['ab', 3], ['bc', 4], ['abc', 5], ['cc', 6]]);
const OTHER = tiktoken([['a', 0], ['b', 1], ['c', 2], ['ab', 3], ['bc', 4], ['abc', 5], ['cc', 7]]);

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const scratch = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'ir-rank-file-'));
  dirs.push(d);
  return d;
};
const sameBytes = (a: RankTable, b: RankTable): boolean => Buffer.from(new Uint8Array(a.shared)).equals(Buffer.from(new Uint8Array(b.shared)));

describe('a rank table kept in a file', () => {
  it('is read back byte for byte, and ranks as the table built', () => {
    const path = join(scratch(), 'small.ranks');
    const built = RankTable.fromTiktoken(SOURCE, 'small.tiktoken');
    writeRankTableFile(path, built, sourceDigest(SOURCE));
    const read = readRankTableFile(path, sourceDigest(SOURCE));
    expect(read).not.toBe(null);
    expect(sameBytes(read!, built)).toBe(true);
    for (const s of ['a', 'ab', 'abc', 'cc', 'ca']) {
      const b = Buffer.from(s, 'latin1');
      expect(read!.rankOfBytes(b, 0, b.length)).toBe(built.rankOfBytes(b, 0, b.length));
    }
  });

  it('is refused when missing, of another source, cut short, changed anywhere, or not such a file', () => {
    const dir = scratch();
    const path = join(dir, 'small.ranks');
    writeRankTableFile(path, RankTable.fromTiktoken(SOURCE, 'small.tiktoken'), sourceDigest(SOURCE));
    const whole = readFileSync(path);
    expect(readRankTableFile(join(dir, 'missing.ranks'), sourceDigest(SOURCE))).toBe(null);
    expect(readRankTableFile(path, sourceDigest(OTHER))).toBe(null);
    for (const keep of [0, 7, 8, 47, 48, 49, whole.length - 1]) {
      writeFileSync(path, whole.subarray(0, keep));
      expect(readRankTableFile(path, sourceDigest(SOURCE)), `cut at ${keep}`).toBe(null);
    }
    // Every byte changed in turn: the magic, either digest, the table's header, ranks, slots, bytes.
    for (let at = 0; at < whole.length; at++) {
      const changed = Buffer.from(whole);
      changed[at] ^= 0x01;
      writeFileSync(path, changed);
      expect(readRankTableFile(path, sourceDigest(SOURCE)), `byte ${at} changed`).toBe(null);
    }
    writeFileSync(path, Buffer.concat([whole, Buffer.from([0])]));
    expect(readRankTableFile(path, sourceDigest(SOURCE)), 'one byte more').toBe(null);
    writeFileSync(path, whole);
    expect(readRankTableFile(path, sourceDigest(SOURCE))).not.toBe(null);
  });
});

describe('the file the build writes', () => {
  it('holds o200k_base exactly as built from gpt-tokenizer\'s file, and the built module reads it', () => {
    const file = builtFile('tokens/o200k_base.ranks', 'src/tokens/rank-table-file.ts', 'src/tokens/rank-table.ts');
    const module = builtFile('tokens/o200k-ranks.js', 'src/tokens/o200k-ranks.ts');
    const { table, digest } = buildO200kTable(o200kRanksFile());
    const read = readRankTableFile(file, digest);
    expect(read).not.toBe(null);
    expect(sameBytes(read!, table)).toBe(true);
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', `
      const m = await import(${JSON.stringify(module)});
      const t = m.o200kRanks();
      console.log(JSON.stringify({ origin: m.o200kRanksOrigin(), entries: t.entries }));
    `], { encoding: 'utf8' });
    expect(JSON.parse(out)).toEqual({ origin: 'file', entries: 199_998 });
  });
});
