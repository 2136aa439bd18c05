import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ListenerTlsPair } from '../../../src/config/listener-tls.js';
import { TlsRotation } from '../../../src/primary/tls-rotation.js';
import { TlsServedFiles } from '../../../src/primary/tls-served-files.js';
import { tlsCertificateSeries } from '../../../src/observe/tls-certificate-series.js';

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
  });
  return { r, disk, lines, rotations, most: () => most };
}

const turn = (): Promise<void> => new Promise((res) => setImmediate(res));

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

  it('a rotation that fails keeps the pair served, says so, and the same files are tried again at the next change', async () => {
    const { r, disk, lines, rotations } = setup();
    disk.cert = disk.key = 'b';
    const p = r.changed();
    rotations[0].fail(new Error('worker 12, started to replace worker 10, exited before listening'));
    await p;
    expect(r.served.subject).toBe('CN=a');
    expect(lines.at(-1)).toMatch(/^warn certificate rotation stopped: worker 12, started to replace worker 10, exited before listening; checked again/);
    void r.changed();
    expect(rotations).toHaveLength(2);
  });

  it('a rotation ended by the router\'s drain is not warned about', async () => {
    const { r, disk, lines, rotations } = setup();
    disk.cert = disk.key = 'b';
    const p = r.changed();
    r.stop();
    rotations[0].fail(new Error('the router is stopping'));
    await p;
    expect(lines.filter((l) => l.startsWith('warn'))).toEqual([]);
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
