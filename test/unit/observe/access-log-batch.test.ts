import { describe, expect, it } from 'vitest';
import { RecordBatcher } from '../../../src/observe/access-log-batch.js';
import { MAX_LINE_BYTES } from '../../../src/observe/access-log-format.js';

describe('RecordBatcher', () => {
  it('cuts whole lines into batches of at most the limit, counting records', () => {
    const batches: { bytes: Buffer; records: number }[] = [];
    const b = new RecordBatcher(4096, (bytes, records) => batches.push({ bytes, records }));
    const lines: string[] = [];
    for (let i = 0; i < 5000; i++) {
      // Mixed sizes up to the 4095-byte maximum, some multi-byte.
      const line = i % 50 === 0 ? 'x'.repeat(MAX_LINE_BYTES) : `${i}:` + 'é中'.repeat(i % 300);
      lines.push(line);
      b.add(line);
    }
    expect(b.pending).toBeGreaterThan(0);
    b.flush();
    expect(b.pending).toBe(0);
    b.flush(); // nothing left: no empty batch
    let records = 0;
    const out: string[] = [];
    for (const { bytes, records: n } of batches) {
      expect(bytes.length).toBeLessThanOrEqual(4096);
      expect(bytes.length).toBeGreaterThan(0);
      expect(bytes[bytes.length - 1]).toBe(0x0a);
      const got = bytes.toString('utf8').slice(0, -1).split('\n');
      expect(got).toHaveLength(n);
      records += n;
      out.push(...got);
    }
    expect(records).toBe(5000);
    expect(out).toEqual(lines);
  });

  it('hands over exact-size copies that later records do not touch', () => {
    const seen: Buffer[] = [];
    const b = new RecordBatcher(4096, (bytes) => seen.push(bytes));
    b.add('a');
    b.add('b');
    b.flush();
    b.add('c');
    b.flush();
    expect(seen.map((x) => x.toString())).toEqual(['a\nb\n', 'c\n']);
    expect(seen[0]!.buffer.byteLength).toBe(4);
    expect(seen[0]!.buffer).not.toBe(seen[1]!.buffer);
  });

  it('refuses a batch size below one record', () => {
    expect(() => new RecordBatcher(1000, () => {})).toThrow(/batch size 1000 is below one record \(4096\)/);
  });
});
