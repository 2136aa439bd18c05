/**
 * `node dist/tokens/write-rank-table-file.js`: writes o200k_base's rank table beside the built
 * code (rank-table-file.ts), made from the `.tiktoken` file installed now. Run by `npm run build`
 * and by the container image's build; without the file a process builds the table at its start.
 */
import { buildO200kTable, o200kRanksFile, O200K_TABLE_FILE } from './o200k-ranks.js';
import { writeRankTableFile } from './rank-table-file.js';

const { table, digest } = buildO200kTable(o200kRanksFile());
writeRankTableFile(O200K_TABLE_FILE, table, digest);
process.stdout.write(`inference-router: wrote the o200k_base rank table (${table.entries} sequences, ${table.shared.byteLength} bytes) to ${O200K_TABLE_FILE}\n`);
