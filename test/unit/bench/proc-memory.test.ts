import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseResident, residentOf } from '../../../bench/proc-memory.js';

const STATUS = 'Name:\tnode\nVmPeak:\t 1785572 kB\nVmRSS:\t  249956 kB\nRssAnon:\t  202440 kB\nRssFile:\t   47516 kB\nThreads:\t11\n';
const dir = mkdtempSync(join(tmpdir(), 'ir-proc-memory-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('resident memory of processes', () => {
  it('reads VmRSS and RssAnon in bytes; a missing line counts 0', () => {
    expect(parseResident(STATUS)).toEqual({ rss: 249956 * 1024, anon: 202440 * 1024 });
    expect(parseResident('Name:\tkthreadd\n')).toEqual({ rss: 0, anon: 0 });
  });

  it('sums over processes and skips one that has ended', () => {
    for (const [pid, rss, anon] of [[10, 1000, 600], [11, 500, 100]]) {
      mkdirSync(join(dir, String(pid)));
      writeFileSync(join(dir, String(pid), 'status'), `VmRSS:\t${rss} kB\nRssAnon:\t${anon} kB\n`);
    }
    expect(residentOf([10, 11, 12], dir)).toEqual({ rss: 1500 * 1024, anon: 700 * 1024 });
  });

  it('reads this process itself from the real /proc', () => {
    const me = residentOf([process.pid]);
    expect(me.rss).toBeGreaterThan(me.anon);
    expect(me.anon).toBeGreaterThan(0);
  });
});
