import { describe, expect, it } from 'vitest';
import { CertificateExpiryWatch, CHECK_EVERY_MS, span, type ServedCertificate } from '../../../src/primary/certificate-expiry.js';
import { ManualTimers } from '../../helpers/manual-timers.js';

const HOUR = 3600 * 1000;
const DAY = 24 * HOUR;
const T0 = Date.parse('2026-12-01T00:00:00Z');

function setUp(notAfter: number, fingerprint = 'AA') {
  const timers = new ManualTimers();
  let cert: ServedCertificate = { subject: 'CN=router.example', notAfter: new Date(notAfter), fingerprint256: fingerprint };
  const lines: { level: string; message: string; fields: Record<string, unknown> }[] = [];
  const watch = new CertificateExpiryWatch(
    () => cert,
    { warn: (message, fields) => lines.push({ level: 'warn', message, fields }), error: (message, fields) => lines.push({ level: 'error', message, fields }) },
    () => T0 + timers.now,
    timers,
  );
  return { timers, lines, watch, serve: (c: ServedCertificate) => { cert = c; } };
}

describe('the served certificate\'s expiry in the log', () => {
  it('says nothing while it is valid for more than 7 days; warns once it is within them, then once a day', async () => {
    const { timers, lines, watch } = setUp(T0 + 8 * DAY);
    watch.start();
    expect(lines).toEqual([]);
    await timers.advance(DAY - HOUR); // 7 days and 1 h left
    expect(lines).toEqual([]);
    await timers.advance(HOUR); // checked hourly: 7 days left
    expect(lines).toHaveLength(1);
    expect(lines[0].level).toBe('warn');
    expect(lines[0].message).toBe('the certificate served over HTTPS (CN=router.example) expires at 2026-12-09T00:00:00.000Z, in 7 days; renew ROUTER_TLS_CERT_FILE and ROUTER_TLS_KEY_FILE: the router serves a new pair without a restart');
    expect(lines[0].fields).toEqual({ subject: 'CN=router.example', notAfter: '2026-12-09T00:00:00.000Z', fingerprint: 'AA', secondsLeft: (7 * DAY) / 1000 });
    await timers.advance(DAY - HOUR);
    expect(lines).toHaveLength(1);
    await timers.advance(HOUR);
    expect(lines).toHaveLength(2);
    expect(lines[1].message).toContain('in 6 days;');
  });

  it('an expired certificate: an error line at start, again a day later', async () => {
    const { timers, lines, watch } = setUp(T0 - 2 * HOUR - 5 * 60_000);
    watch.start();
    expect(lines.map((l) => l.level)).toEqual(['error']);
    expect(lines[0].message).toBe('the certificate served over HTTPS (CN=router.example) expired at 2026-11-30T21:55:00.000Z, 2 h 5 min ago: clients that check it refuse to connect; renew ROUTER_TLS_CERT_FILE and ROUTER_TLS_KEY_FILE: the router serves a new pair without a restart');
    await timers.advance(DAY);
    expect(lines.map((l) => l.level)).toEqual(['error', 'error']);
  });

  it('after a rotation: a renewed certificate ends the warnings; a new one still near its end is said at once', async () => {
    const { timers, lines, watch, serve } = setUp(T0 + 2 * DAY);
    watch.start();
    expect(lines).toHaveLength(1);
    serve({ subject: 'CN=router.example', notAfter: new Date(T0 + 3 * DAY), fingerprint256: 'BB' });
    watch.check(); // the rotation is done
    expect(lines).toHaveLength(2);
    expect(lines[1].fields.fingerprint).toBe('BB');
    serve({ subject: 'CN=router.example', notAfter: new Date(T0 + 90 * DAY), fingerprint256: 'CC' });
    watch.check();
    await timers.advance(30 * DAY);
    expect(lines).toHaveLength(2);
    // One timer at a time, however often it is checked.
    expect(timers.pending()).toEqual([CHECK_EVERY_MS]);
    watch.stop();
    expect(timers.pending()).toEqual([]);
    // A rotation under way when the router stopped, done after: no check, no timer.
    serve({ subject: 'CN=router.example', notAfter: new Date(T0 - DAY), fingerprint256: 'DD' });
    watch.check();
    expect(lines).toHaveLength(2);
    expect(timers.pending()).toEqual([]);
  });

  it('spans read as a person would write them', () => {
    expect(span(40 * 60_000)).toBe('40 min');
    expect(span(5 * HOUR + 12 * 60_000)).toBe('5 h 12 min');
    expect(span(3 * HOUR)).toBe('3 h');
    expect(span(DAY)).toBe('1 day');
    expect(span(3 * DAY + 4 * HOUR + 59 * 60_000)).toBe('3 days 4 h');
  });
});
