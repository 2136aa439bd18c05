import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/config/settings.js';
import { parseAllSettings } from '../../src/settings.js';

describe('parseAllSettings', () => {
  it('returns one deep-frozen object holding the router settings and every part', () => {
    const s = parseAllSettings(['--resources', 'r.yaml', '--port', '9000'], {
      ROUTER_AUTH_CONFIG: '/etc/router/auth.yaml',
      ACCESS_LOG_FORMAT: 'json',
      ROUTER_TOKEN_ESTIMATOR: 'chars',
      RATE_LIMIT_REDIS_FAILURE_MODE: 'closed',
      RATE_LIMIT_REDIS_TIMEOUT: '80ms',
    })!;
    expect(s).toMatchObject({ source: 'file', resources: 'r.yaml', port: 9000, authConfig: '/etc/router/auth.yaml' });
    expect(s.accessLog).toMatchObject({ enabled: true, format: 'json', output: 'stdout' });
    expect(s.tokenizer.estimator).toBe('chars');
    expect(s.redisLimits).toMatchObject({ failureMode: 'closed', timeoutMs: 80, tls: false, cluster: false });
    for (const o of [s, s.accessLog, s.tokenizer, s.redisLimits]) expect(Object.isFrozen(o)).toBe(true);
    expect(() => { (s.accessLog as { format: string }).format = 'text'; }).toThrow(TypeError);
  });

  it('has no auth file unless ROUTER_AUTH_CONFIG names one', () => {
    expect(parseAllSettings(['--resources', 'r.yaml'], {})!.authConfig).toBeNull();
    expect(parseAllSettings(['--resources', 'r.yaml'], { ROUTER_AUTH_CONFIG: '' })!.authConfig).toBeNull();
  });

  it('returns null for --help without looking at the environment', () => {
    expect(parseAllSettings(['--help'], { ACCESS_LOG_FORMAT: 'xml' })).toBeNull();
  });

  it('reads the CA file named by REDIS_TLS_CA_FILE', () => {
    const dir = mkdtempSync(join(tmpdir(), 'settings-'));
    const ca = join(dir, 'ca.pem');
    writeFileSync(ca, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
    expect(parseAllSettings(['--resources', 'r'], { REDIS_TLS_CA_FILE: ca })!.redisLimits.tlsCa).toContain('BEGIN CERTIFICATE');
  });

  it.each([
    [{ ROUTER_WORKERS: '0', ACCESS_LOG_FORMAT: 'xml' }, 'ROUTER_WORKERS: expected an integer from 1 to 256; got "0"'],
    [{ ACCESS_LOG_FORMAT: 'xml', ROUTER_TOKEN_ESTIMATOR: 'words' }, 'ACCESS_LOG_FORMAT: expected json or text; got "xml"'],
    [{ ROUTER_TOKEN_ESTIMATOR: 'words', RATE_LIMIT_REDIS_TIMEOUT: 'soon' }, 'ROUTER_TOKEN_ESTIMATOR: expected bpe or chars; got "words"'],
    [{ RATE_LIMIT_REDIS_TIMEOUT: 'soon' }, 'RATE_LIMIT_REDIS_TIMEOUT: expected a duration'],
    [{ REDIS_CLUSTER: 'maybe' }, 'REDIS_CLUSTER: expected true or false; got "maybe"'],
  ] as const)('rejects %j with the first bad value, named', (env, msg) => {
    expect(() => parseAllSettings(['--resources', 'r'], env)).toThrow(msg);
  });

  it('throws UsageError for flags and router settings, a plain Error for a part setting', () => {
    expect(() => parseAllSettings(['--bogus'], {})).toThrow(UsageError);
    let err: unknown;
    try { parseAllSettings(['--resources', 'r'], { ACCESS_LOG_ENABLED: 'yes' }); } catch (e) { err = e; }
    expect(err).toBeInstanceOf(Error);
    expect(err).not.toBeInstanceOf(UsageError);
  });
});
