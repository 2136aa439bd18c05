import { describe, expect, it } from 'vitest';
import { DescriptorGuard, descriptorReserve, type DescriptorSource } from '../../../src/worker/descriptor-guard.js';
import { openFileLimit } from '../../../src/open-file-limit.js';

/** A descriptor table of `size` entries, `used` of them taken by the rest of the process. */
class FakeTable implements DescriptorSource {
  readonly open_ = new Set<number>();
  used = 0;
  failWith: string | null = null;
  private next = 100;
  constructor(readonly size: number) {}
  open(): number {
    if (this.failWith !== null) throw Object.assign(new Error(this.failWith), { code: this.failWith });
    if (this.used + this.open_.size >= this.size) throw Object.assign(new Error('EMFILE: too many open files'), { code: 'EMFILE' });
    const fd = this.next++;
    this.open_.add(fd);
    return fd;
  }
  close(fd: number): void {
    expect(this.open_.delete(fd)).toBe(true);
  }
}

function guardOn(table: FakeTable, opts: { resumeOk?: () => boolean; reserve?: { n: number } } = {}) {
  const events: string[] = [];
  let now = 0;
  const g = new DescriptorGuard({
    reserve: () => opts.reserve?.n ?? 4, limit: () => table.size, everyMs: 60_000, source: table, now: () => now,
    pause: () => events.push('pause'),
    resume: () => {
      const ok = opts.resumeOk?.() ?? true;
      events.push(ok ? 'resume' : 'resume-failed');
      return ok;
    },
    paused: () => events.push('counted'),
    log: (level, m) => events.push(`${level}: ${m}`),
  });
  return { g, events, advanceClock: (ms: number) => { now += ms; } };
}

describe('DescriptorGuard', () => {
  it('holds its reserve; with descriptors free it does nothing', () => {
    const table = new FakeTable(100);
    const { g, events } = guardOn(table);
    g.start();
    expect(table.open_.size).toBe(4);
    table.used = 50;
    g.advance();
    g.advance();
    expect(events).toEqual([]);
    expect(table.open_.size).toBe(4);
    g.stop();
    expect(table.open_.size).toBe(0);
  });

  it('with none free it closes the listener, gives the reserve back and says so once; it listens again when twice the reserve is free', () => {
    const table = new FakeTable(100);
    const { g, events } = guardOn(table);
    g.start();
    table.used = 96; // the reserve holds the other 4
    g.advance();
    expect(g.paused).toBe(true);
    expect(events.slice(0, 2)).toEqual(['pause', 'counted']);
    expect(events[2]).toBe('warn: no file descriptor free (the open-file limit is 100): this worker stopped accepting connections; '
      + 'the other workers take them, and the requests in flight go on. It accepts again once connections close; raise the limit (ulimit -n, systemd LimitNOFILE) if this recurs');
    // The reserve is free for the requests in flight.
    expect(table.open_.size).toBe(0);
    // Some connections closed, not enough: still paused, nothing held.
    table.used = 94;
    g.advance();
    expect(g.paused).toBe(true);
    expect(table.open_.size).toBe(0);
    expect(events).toHaveLength(3);
    // Twice the reserve free: listens again, holding the reserve.
    table.used = 92;
    g.advance();
    expect(g.paused).toBe(false);
    expect(table.open_.size).toBe(4);
    expect(events.slice(3)).toEqual(['resume', 'info: file descriptors free again: this worker accepts connections again']);
  });

  it('a listen that fails keeps it paused and holding nothing; tried again next tick', () => {
    const table = new FakeTable(100);
    let ok = false;
    const { g, events } = guardOn(table, { resumeOk: () => ok });
    g.start();
    table.used = 96;
    g.advance();
    table.used = 0;
    g.advance();
    expect(g.paused).toBe(true);
    expect(table.open_.size).toBe(0);
    ok = true;
    g.advance();
    expect(g.paused).toBe(false);
    expect(events.filter((e) => e.startsWith('resume'))).toEqual(['resume-failed', 'resume']);
  });

  it('pauses within a minute of the last logged one are counted, each, and told in the next line', () => {
    const table = new FakeTable(100);
    const { g, events, advanceClock } = guardOn(table);
    g.start();
    for (let i = 0; i < 3; i++) {
      table.used = 96;
      g.advance();
      table.used = 0;
      g.advance();
      advanceClock(10_000);
    }
    expect(events.filter((e) => e === 'counted')).toHaveLength(3);
    expect(events.filter((e) => e.startsWith('warn'))).toHaveLength(1);
    // The unlogged pauses' ends are not told either.
    expect(events.filter((e) => e.startsWith('info'))).toHaveLength(1);
    advanceClock(60_000);
    table.used = 96;
    g.advance();
    expect(events.filter((e) => e.startsWith('warn')).at(-1)).toContain('stopped accepting connections (3 times since the last such line)');
  });

  it('the reserve follows the limit: lowered while paused, it listens again once what it gave back and the new reserve are free', () => {
    const table = new FakeTable(100);
    const reserve = { n: 4 };
    const { g } = guardOn(table, { reserve });
    g.start();
    table.used = 96;
    g.advance();
    expect(g.paused).toBe(true);
    // The limit lowered (a reserve of 1 now): the 4 given back and 1 beside them must be free.
    reserve.n = 1;
    table.used = 96;
    g.advance();
    expect(g.paused).toBe(true);
    table.used = 95;
    g.advance();
    expect(g.paused).toBe(false);
    expect(table.open_.size).toBe(1);
  });

  it('a reserve taken short at start is filled once there is room', () => {
    const table = new FakeTable(100);
    table.used = 98;
    const { g } = guardOn(table);
    g.start();
    expect(table.open_.size).toBe(2);
    table.used = 50;
    g.advance();
    expect(table.open_.size).toBe(4);
  });

  it('stops watching, with a warning, when /dev/null cannot be opened for another reason', () => {
    const table = new FakeTable(100);
    const { g, events } = guardOn(table);
    g.start();
    table.failWith = 'ENOENT';
    g.advance();
    expect(g.paused).toBe(false);
    expect(events).toEqual(['warn: cannot open /dev/null to watch the file descriptors left; a worker that runs out of them is not paused']);
    expect(table.open_.size).toBe(0);
  });
});

describe('descriptor limits', () => {
  it('reads the soft open-file limit from /proc/self/limits', () => {
    const text = 'Limit                     Soft Limit           Hard Limit           Units     \nMax processes             127551               127551               processes \nMax open files            1024                 524288               files     \n';
    expect(openFileLimit(() => text)).toBe(1024);
    expect(openFileLimit(() => 'Max open files            unlimited            unlimited            files\n')).toBeNull();
    expect(openFileLimit(() => { throw new Error('ENOENT'); })).toBeNull();
    if (process.platform === 'linux') expect(openFileLimit()).toBeGreaterThan(0);
  });

  it('the reserve is 1/128 of the limit, 8 to 64', () => {
    expect([descriptorReserve(256), descriptorReserve(4096), descriptorReserve(65536), descriptorReserve(null)]).toEqual([8, 32, 64, 16]);
  });
});
