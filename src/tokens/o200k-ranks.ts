/**
 * This process's o200k_base rank table (rank-table.ts), built on first use from the `.tiktoken`
 * file gpt-tokenizer ships (its `data/` folder; the library's code is not loaded). A tokenizer
 * thread is handed the event loop's table in its workerData (`rankTableWorkerData`) and uses the
 * same memory instead of building its own.
 */
import { createRequire } from 'node:module';
import { workerData } from 'node:worker_threads';
import { RankTable } from './rank-table.js';

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

/** The table: the one this thread was handed, else built from the ranks file (once; throws naming the file). */
export function o200kRanks(): RankTable {
  return (table ??= handedTable() ?? RankTable.load(o200kRanksFile()));
}

/** The workerData for a tokenizer thread that shares this process's table (building it if need be). */
export function rankTableWorkerData(): RankTableWorkerData {
  return { o200kRanks: o200kRanks().shared };
}

function handedTable(): RankTable | null {
  const data = workerData as Partial<RankTableWorkerData> | null | undefined;
  return data?.o200kRanks instanceof SharedArrayBuffer ? RankTable.fromShared(data.o200kRanks) : null;
}
