/**
 * This process's o200k_base rank table (rank-table.ts), made on first use from the `.tiktoken`
 * file gpt-tokenizer ships (its `data/` folder; the library's code is not loaded): read from the
 * table file the build wrote beside this module when that file was made from the same `.tiktoken`
 * bytes (rank-table-file.ts), built from them otherwise. A tokenizer thread is handed the event
 * loop's table in its workerData (`rankTableWorkerData`) and uses the same memory instead of
 * making its own.
 */
import type { Buffer } from 'node:buffer';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { workerData } from 'node:worker_threads';
import { RankTable, readRanksFile } from './rank-table.js';
import { readRankTableFile, sourceDigest } from './rank-table-file.js';

/** The table file `npm run build` writes (write-rank-table-file.ts), beside this module. */
export const O200K_TABLE_FILE = fileURLToPath(new URL('./o200k_base.ranks', import.meta.url));

/** The package file o200k_base's ranks are read from. */
export const O200K_RANKS_SPECIFIER = 'gpt-tokenizer/data/o200k_base.tiktoken';

/** Where the ranks file is on disk; throws naming it when it is not installed. */
export function o200kRanksFile(specifier = O200K_RANKS_SPECIFIER): string {
  try {
    return createRequire(import.meta.url).resolve(specifier);
  } catch (err) {
    throw new Error(`cannot find the token ranks file ${specifier} (is the gpt-tokenizer package installed?): ${(err as Error).message.split('\n')[0]}`);
  }
}

/** What a tokenizer thread is started with: the table's shared buffer. */
export interface RankTableWorkerData {
  readonly o200kRanks: SharedArrayBuffer;
}

let table: RankTable | null = null;
let origin: 'handed' | 'file' | 'built' | null = null;

/** The table: the one this thread was handed, else read or built from the ranks file (once; throws naming the file). */
export function o200kRanks(): RankTable {
  if (table !== null) return table;
  const handed = handedTable();
  if (handed !== null) {
    origin = 'handed';
    return (table = handed);
  }
  const path = o200kRanksFile();
  const source = readRanksFile(path);
  const kept = readRankTableFile(O200K_TABLE_FILE, sourceDigest(source));
  origin = kept !== null ? 'file' : 'built';
  return (table = kept ?? RankTable.fromTiktoken(source, path));
}

/** Where this process's table came from (null before its first use): tests, and the start's cost. */
export function o200kRanksOrigin(): 'handed' | 'file' | 'built' | null {
  return origin;
}

/** The table built from the `.tiktoken` file at `path`, and that file's digest (write-rank-table-file.ts). */
export function buildO200kTable(path: string): { table: RankTable; digest: Buffer } {
  const source = readRanksFile(path);
  return { table: RankTable.fromTiktoken(source, path), digest: sourceDigest(source) };
}

/** The workerData for a tokenizer thread that shares this process's table (building it if need be). */
export function rankTableWorkerData(): RankTableWorkerData {
  return { o200kRanks: o200kRanks().shared };
}

function handedTable(): RankTable | null {
  const data = workerData as Partial<RankTableWorkerData> | null | undefined;
  return data?.o200kRanks instanceof SharedArrayBuffer ? RankTable.fromShared(data.o200kRanks) : null;
}
