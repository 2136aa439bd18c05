import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ListenerTlsPair } from '../../../src/config/listener-tls.js';
import { RETRY_FIRST_MS, RETRY_MAX_MS, TlsRotation } from '../../../src/primary/tls-rotation.js';
import { TlsServedFiles } from '../../../src/primary/tls-served-files.js';
import { tlsCertificateSeries } from '../../../src/observe/tls-certificate-series.js';
import { ManualTimers, turn } from '../../helpers/manual-timers.js';

const FILES = Object.freeze({ certFile: '/secret/tls.crt', keyFile: '/secret/tls.key' });

function pair(name: string, notAfter = '2030-01-01T00:00:00Z'): ListenerTlsPair {
  return { certPem: `cert ${name}`, keyPem: `key ${name}`, subject: `CN=${name}`, notAfter: new Date(notAfter), fingerprint256: `fp ${name}` };
}

/** A rotation over files held in memory: `disk` is what they hold; `check` refuses a cert and key of different names. */
function setup() {
  const disk = { cert: 'a', key: 'a' };
  const lines: string[] = [];
  const rotations: { to: string; done: () => void; fail: (e: Error) => void }[] = [];
  let running = 0;
  let most = 0;
  const timers = new ManualTimers();
  const r = new TlsRotation({
    files: FILES,
    served: pair('a'),
    readTexts: () => `${disk.cert}\0${disk.key}`,
    check: (f) => {
      if (disk.cert !== disk.key) throw new Error(`ROUTER_TLS_KEY_FILE: the key in "${f.keyFile}" is not the key of the certificate in "${f.certFile}"`);
      return pair(disk.cert);
    },
    rotate: (p) => new Promise<void>((resolve, reject) => {
      running++;
      most = Math.max(most, running);
      rotations.push({ to: p.subject, done: () => { running--; resolve(); }, fail: (e) => { running--; reject(e); } });
    }),
    info: (m) => lines.push(`info ${m}`),
    warn: (m, fields) => lines.push(`warn ${m} ${JSON.stringify(fields)}`),
    timers,
  });
  return { r, disk, lines, rotations, timers, most: () => most };
}

describe('TlsRotation', () => {
  it('does nothing while the files hold the pair served, however often it is told', async () => {
    const { r, lines, rotations } = setup();
    await r.changed();
    await r.changed();
    expect(lines).toEqual([]);
    expect(rotations).toEqual([]);
  });

  it('refuses an invalid pair with one warning naming the variable and the file, and takes the pair once its second file is written', async () => {
    const { r, disk, lines, rotations } = setup();
    disk.cert = 'b';
    await r.changed();
    await r.changed(); // the same contents: not warned again
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^warn certificate not rotated: ROUTER_TLS_KEY_FILE: the key in "\/secret\/tls.key" is not the key of the certificate in "\/secret\/tls.crt"; the workers keep serving the certificate they serve \(CN=a, valid until 2030-01-01T00:00:00.000Z\)/);
    expect(lines[0]).toContain('"variable":"ROUTER_TLS_KEY_FILE","file":"/secret/tls.key"');
    expect(rotations).toEqual([]);
    expect(r.served.subject).toBe('CN=a');
    disk.key = 'b';
    const done = r.changed();
    expect(rotations.map((x) => x.to)).toEqual(['CN=b']);
    expect(r.busy).toBe(true);
    rotations[0].done();
    await done;
    expect(r.served.subject).toBe('CN=b');
    expect(r.busy).toBe(false);
    expect(lines.slice(1)).toEqual([
      'info certificate rotation: replacing the workers one at a time to serve CN=b, valid until 2030-01-01T00:00:00.000Z (was CN=a, valid until 2030-01-01T00:00:00.000Z)',
      'info certificate rotation done: every worker serves CN=b, valid until 2030-01-01T00:00:00.000Z',
    ]);
  });

  it('a change during a rotation is checked once it is done: never two rotations at once', async () => {
    const { r, disk, rotations, most } = setup();
    disk.cert = disk.key = 'b';
    const first = r.changed();
    disk.cert = disk.key = 'c';
    void r.changed();
    void r.changed();
    expect(rotations).toHaveLength(1);
    rotations[0].done();
    await turn();
    expect(rotations.map((x) => x.to)).toEqual(['CN=b', 'CN=c']);
    rotations[1].done();
    await first;
    await turn();
    expect(r.served.subject).toBe('CN=c');
    expect(most()).toBe(1);
  });

  it('files written back to the pair served during a rotation: nothing more once it is done', async () => {
    const { r, disk, rotations } = setup();
    disk.cert = disk.key = 'b';
    const first = r.changed();
    void r.changed();
    rotations[0].done();
    await first;
    await turn();
    expect(rotations).toHaveLength(1);
  });

  it('a rotation that fails keeps the pair served, says what failed and when it is tried again', async () => {
    const { r, disk, lines, rotations, timers } = setup();
    disk.cert = disk.key = 'b';
    const p = r.changed();
    rotations[0].fail(new Error('worker 12, started to replace worker 10, exited before listening'));
    await p;
    expect(r.served.subject).toBe('CN=a');
    expect(lines.at(-1)).toMatch(/^warn certificate rotation stopped: worker 12, started to replace worker 10, exited before listening; tried again in 5 s \(or at once when the files change\) /);
    expect(lines.at(-1)).toContain('"subject":"CN=b"');
    expect(lines.at(-1)).toContain('"rotated":false,"retryMs":5000');
    expect(r.retryPending).toBe(true);
    expect(timers.pending()).toEqual([RETRY_FIRST_MS]);
    void r.changed(); // nothing changed: the retry waits
    expect(rotations).toHaveLength(1);
  });

  it('a stopped rotation is tried again on its own, 5 s later and twice as long after each failure up to 5 min, until it is done', async () => {
    const { r, disk, lines, rotations, timers } = setup();
    disk.cert = disk.key = 'b';
    const p = r.changed();
    rotations[0].fail(new Error('worker 12, started to replace worker 10, exited before listening'));
    await p;
    const waits: number[] = [];
    for (let i = 1; i <= 8; i++) {
      const wait = timers.pending()[0]!;
      waits.push(wait);
      await timers.advance(wait - 1);
      expect(rotations).toHaveLength(i); // not before its time
      await timers.advance(1);
      expect(rotations).toHaveLength(i + 1);
      expect(rotations[i].to).toBe('CN=b');
      expect(r.busy).toBe(true);
      rotations[i].fail(new Error(`worker ${20 + i} exited before listening`));
      await turn();
    }
    expect(waits).toEqual([5_000, 10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000]);
    expect(RETRY_MAX_MS).toBe(300_000);
    const warns = lines.filter((l) => l.startsWith('warn certificate rotation stopped'));
    expect(warns.map((l) => /tried again in ([^(]+) \(/.exec(l)?.[1])).toEqual(['5 s', '10 s', '20 s', '40 s', '1 min 20 s', '2 min 40 s', '5 min', '5 min', '5 min']);
    expect(lines.filter((l) => l.startsWith('info certificate rotation tried again (try 2)'))).toEqual([
      'info certificate rotation tried again (try 2): replacing the workers that do not serve CN=b, valid until 2030-01-01T00:00:00.000Z yet',
    ]);
    await timers.advance(300_000);
    rotations[9].done();
    await turn();
    expect(r.served.subject).toBe('CN=b');
    expect(lines.at(-1)).toBe('info certificate rotation done: every worker serves CN=b, valid until 2030-01-01T00:00:00.000Z');
    expect(r.retryPending).toBe(false);
    expect(timers.pending()).toEqual([]);
  });

  it('a change of the files while a retry waits is checked at once: a new pair is rolled out then, its own retries starting at 5 s', async () => {
    const { r, disk, lines, rotations, timers } = setup();
    disk.cert = disk.key = 'b';
    const p = r.changed();
    rotations[0].fail(new Error('worker 12 exited before listening'));
    await p;
    await timers.advance(5_000);
    rotations[1].fail(new Error('worker 13 exited before listening'));
    await turn();
    expect(timers.pending()).toEqual([10_000]);
    await timers.advance(3_000);
    disk.cert = disk.key = 'c';
    const q = r.changed();
    expect(rotations.map((x) => x.to)).toEqual(['CN=b', 'CN=b', 'CN=c']);
    expect(timers.pending()).toEqual([]); // the retry of CN=b is cancelled
    expect(lines.at(-1)).toMatch(/^info certificate rotation: replacing the workers one at a time to serve CN=c/);
    rotations[2].fail(new Error('worker 14 exited before listening'));
    await q;
    expect(timers.pending()).toEqual([5_000]);
    await timers.advance(5_000);
    expect(rotations.map((x) => x.to)).toEqual(['CN=b', 'CN=b', 'CN=c', 'CN=c']);
    rotations[3].done();
    await turn();
    expect(r.served.subject).toBe('CN=c');
  });

  it('files written back to the pair served after a rotation stopped: that pair is rolled out (the workers serve two)', async () => {
    const { r, disk, rotations, timers } = setup();
    disk.cert = disk.key = 'b';
    const p = r.changed();
    rotations[0].fail(new Error('worker 12 exited before listening'));
    await p;
    disk.cert = disk.key = 'a';
    const q = r.changed();
    expect(rotations.map((x) => x.to)).toEqual(['CN=b', 'CN=a']);
    rotations[1].done();
    await q;
    expect(r.served.subject).toBe('CN=a');
    expect(timers.pending()).toEqual([]);
  });

  it('an invalid pair while a retry waits is refused and the retry kept', async () => {
    const { r, disk, lines, rotations, timers } = setup();
    disk.cert = disk.key = 'b';
    const p = r.changed();
    rotations[0].fail(new Error('worker 12 exited before listening'));
    await p;
    disk.cert = 'c';
    await r.changed();
    expect(lines.at(-1)).toMatch(/^warn certificate not rotated: ROUTER_TLS_KEY_FILE: .*; the rotation to CN=b, valid until 2030-01-01T00:00:00.000Z is still tried again as planned; checked again at the next change/);
    expect(timers.pending()).toEqual([5_000]);
    await timers.advance(5_000);
    expect(rotations.map((x) => x.to)).toEqual(['CN=b', 'CN=b']);
  });

  it('the drain cancels a retry that waits', async () => {
    const { r, disk, rotations, timers } = setup();
    disk.cert = disk.key = 'b';
    const p = r.changed();
    rotations[0].fail(new Error('worker 12 exited before listening'));
    await p;
    r.stop();
    expect(r.retryPending).toBe(false);
    expect(timers.pending()).toEqual([]);
    await timers.advance(RETRY_MAX_MS);
    expect(rotations).toHaveLength(1);
  });

  it('a rotation ended by the router\'s drain is not warned about nor tried again', async () => {
    const { r, disk, lines, rotations, timers } = setup();
    disk.cert = disk.key = 'b';
    const p = r.changed();
    r.stop();
    rotations[0].fail(new Error('the router is stopping'));
    await p;
    expect(lines.filter((l) => l.startsWith('warn'))).toEqual([]);
    expect(timers.pending()).toEqual([]);
  });

  it('starts nothing once stopped', async () => {
    const { r, disk, rotations } = setup();
    r.stop();
    disk.cert = disk.key = 'b';
    await r.changed();
    expect(rotations).toEqual([]);
  });
});

describe('TlsServedFiles', () => {
  it('copies each pair under new names, private, prunes the previous ones and removes its directory', () => {
    const parent = mkdtempSync(join(tmpdir(), 'ir-test-served-'));
    try {
      const given = { certFile: '/secret/tls.crt', keyFile: '/secret/tls.key' };
      const s = new TlsServedFiles(given, parent);
      expect(s.files).toBe(given);
      const one = s.write(pair('a'));
      expect(readFileSync(one.certFile, 'utf8')).toBe('cert a');
      expect(readFileSync(one.keyFile, 'utf8')).toBe('key a');
      expect(statSync(one.keyFile).mode & 0o777).toBe(0o600);
      const two = s.write(pair('b'));
      expect(two.certFile).not.toBe(one.certFile);
      expect(s.files).toBe(two);
      expect(existsSync(one.keyFile)).toBe(true); // kept until pruned (workers may still be reading it)
      s.prune();
      expect(existsSync(one.keyFile)).toBe(false);
      expect(readFileSync(two.keyFile, 'utf8')).toBe('key b');
      s.remove();
      expect(existsSync(two.keyFile)).toBe(false);
      expect(s.files).toBe(given);
      expect(s.fallback).toBe(null);
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });

  it('where no directory can be made, the given files are used and it says why', () => {
    const given = { certFile: '/secret/tls.crt', keyFile: '/secret/tls.key' };
    const s = new TlsServedFiles(given, '/nonexistent/dir');
    expect(s.write(pair('a'))).toBe(given);
    expect(s.fallback).toMatch(/^cannot make a directory in \/nonexistent\/dir/);
  });
});

describe('tlsCertificateSeries', () => {
  it('is the notAfter in seconds since the epoch, one gauge kept as is across workers', () => {
    const [m] = tlsCertificateSeries(new Date('2030-01-01T00:00:00.500Z'));
    expect(m.name).toBe('inference_router_tls_certificate_expiry_seconds');
    expect(m.type).toBe('gauge');
    expect(m.aggregator).toBe('max');
    expect(m.values).toEqual([{ labels: {}, value: 1893456000 }]);
  });
});
