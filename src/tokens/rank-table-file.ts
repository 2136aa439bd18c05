/**
 * A rank table (rank-table.ts) kept in a file, so that a process reads the table instead of
 * building it from the encoding's `.tiktoken` file: building o200k_base's takes a worker about
 * 100 ms of its start, reading and checking it 35-45 ms. `npm run build` writes the file beside the
 * code (write-rank-table-file.ts); a process uses it only when it was made from the very `.tiktoken`
 * file installed now (the digest of its bytes is in the file's head) and holds the table unchanged,
 * and builds the table from the source otherwise, as without the file.
 *
 * Layout: the 8 bytes `IRRANKS1`, the SHA-1 of the source's bytes, the SHA-1 of the table's bytes,
 * then the table's shared buffer as is. The digests check that the file belongs to the source
 * installed and arrived whole and unchanged (a damaged table would count tokens wrong without an
 * error); they are no defence against someone who can write the file, who can write the code
 * beside it as well. SHA-1 because both take about 5 ms of the start (SHA-256 about 15).
 */
import { Buffer } from 'node:buffer';
import { createHash } from 'node:crypto';
import { closeSync, fstatSync, openSync, readSync, renameSync, writeFileSync } from 'node:fs';
import { RankTable } from './rank-table.js';

const MAGIC = Buffer.from('IRRANKS1', 'latin1');
const DIGEST_BYTES = 20;
const HEAD_BYTES = MAGIC.length + 2 * DIGEST_BYTES;

function digestOf(bytes: Uint8Array): Buffer {
  return createHash('sha1').update(bytes).digest();
}

/** The digest of a `.tiktoken` file's bytes: what a table file must have been made from. */
export function sourceDigest(source: Uint8Array): Buffer {
  return digestOf(source);
}

/** Writes `table`, made from the source of `digest`, to `path` (through a temporary name: a reader never sees half a file). */
export function writeRankTableFile(path: string, table: RankTable, digest: Uint8Array): void {
  const tmp = `${path}.${process.pid}.tmp`;
  const bytes = new Uint8Array(table.shared);
  writeFileSync(tmp, Buffer.concat([MAGIC, Buffer.from(digest), digestOf(bytes), bytes]));
  renameSync(tmp, path);
}

/**
 * The table in `path` when it was made from the source of `digest` and is whole; null when the
 * file is missing, unreadable, of another source, changed, or not such a table (the caller then builds it).
 */
export function readRankTableFile(path: string, digest: Uint8Array): RankTable | null {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return null;
  }
  try {
    const size = fstatSync(fd).size;
    if (size <= HEAD_BYTES) return null;
    const head = Buffer.alloc(HEAD_BYTES);
    if (readSync(fd, head, 0, HEAD_BYTES, 0) !== HEAD_BYTES) return null;
    if (!head.subarray(0, MAGIC.length).equals(MAGIC) || !head.subarray(MAGIC.length, MAGIC.length + DIGEST_BYTES).equals(digest)) return null;
    const shared = new SharedArrayBuffer(size - HEAD_BYTES);
    const into = new Uint8Array(shared);
    let at = 0;
    while (at < into.length) {
      const n = readSync(fd, into, at, into.length - at, HEAD_BYTES + at);
      if (n === 0) return null;
      at += n;
    }
    if (!digestOf(into).equals(head.subarray(MAGIC.length + DIGEST_BYTES))) return null;
    // Checks the table's own magic number and that its header's sizes fill the buffer exactly.
    return RankTable.fromShared(shared);
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}
