import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { awaitDumps, dumpTotal, parseDumpName, splitByRole, takeDumps } from '../../../bench/callgrind-dumps.js';

describe('callgrind dumps', () => {
  test('names: pid, dump and thread; the exit dump and other files are not thread dumps', () => {
    expect(parseDumpName('cg.6424.12-03')).toEqual({ pid: 6424, dump: 12, thread: 3 });
    expect(parseDumpName('cg.6424')).toBeNull();
    expect(parseDumpName('cg.6424.1')).toBeNull();
    expect(parseDumpName('access.log')).toBeNull();
  });

  test('the total comes from the totals line, or summary where there is none', () => {
    expect(dumpTotal('version: 1\nevents: Ir\nfn=x\n5 10\ntotals: 945885469\n')).toBe(945885469);
    expect(dumpTotal('events: Ir\nsummary: 42\n')).toBe(42);
    expect(() => dumpTotal('events: Ir\n')).toThrow(/totals/);
  });

  test('a round is split into the workers\' main threads, their other threads and the primary', () => {
    const dumps = [
      { pid: 10, dump: 1, thread: 1, instructions: 5 },
      { pid: 10, dump: 1, thread: 3, instructions: 7 },
      { pid: 11, dump: 1, thread: 1, instructions: 100 },
      { pid: 11, dump: 1, thread: 4, instructions: 20 },
      { pid: 12, dump: 1, thread: 1, instructions: 200 },
    ];
    expect(splitByRole(dumps, 10)).toEqual({ workersMain: 300, workersOther: 20, primary: 12 });
  });

  test('takeDumps reads every thread dump and removes it, leaving other files', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ir-cg-'));
    writeFileSync(join(dir, 'cg.7.2-01'), 'totals: 30\n');
    writeFileSync(join(dir, 'cg.7.2-02'), 'summary: 4\n');
    writeFileSync(join(dir, 'cg.7'), 'totals: 999\n');
    const got = takeDumps(dir).sort((a, b) => a.thread - b.thread);
    expect(got).toEqual([{ pid: 7, dump: 2, thread: 1, instructions: 30 }, { pid: 7, dump: 2, thread: 2, instructions: 4 }]);
    expect(readdirSync(dir)).toEqual(['cg.7']);
  });

  test('takeDumps hands each dump\'s text to onText before removing it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ir-cg-'));
    writeFileSync(join(dir, 'cg.7.2-01'), 'fn=a\n1 30\ntotals: 30\n');
    const seen: string[] = [];
    takeDumps(dir, (d, text) => seen.push(`${d.pid}.${d.thread}:${text.length}:${readdirSync(dir).length}`));
    expect(seen).toEqual(['7.1:21:1']);
    expect(readdirSync(dir)).toEqual([]);
  });

  test('a file without its totals line yet is left for later', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ir-cg-'));
    writeFileSync(join(dir, 'cg.7.2-01'), 'events: Ir\nfn=x\n');
    expect(takeDumps(dir)).toEqual([]);
    expect(readdirSync(dir)).toEqual(['cg.7.2-01']);
  });

  test('awaitDumps waits for every process\'s main-thread dump, written after the call began', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ir-cg-'));
    writeFileSync(join(dir, 'cg.7.1-01'), 'totals: 10\n');
    writeFileSync(join(dir, 'cg.8.1-01'), 'events: Ir\n');
    setTimeout(() => writeFileSync(join(dir, 'cg.8.1-01'), 'events: Ir\ntotals: 20\n'), 400);
    setTimeout(() => writeFileSync(join(dir, 'cg.8.1-02'), 'totals: 3\n'), 500);
    const got = await awaitDumps(dir, [7, 8], 10_000);
    expect(got.map((d) => d.instructions).sort((a, b) => a - b)).toEqual([3, 10, 20]);
    expect(readdirSync(dir)).toEqual([]);
  });

  test('awaitDumps fails with the pids when a dump never comes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ir-cg-'));
    await expect(awaitDumps(dir, [9], 700)).rejects.toThrow(/dumps of 9 did not appear/);
  });
});
