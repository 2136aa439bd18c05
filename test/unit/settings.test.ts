import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/config/settings.js';
import { DURATION_VARIABLES, parseAllSettings } from '../../src/settings.js';

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

describe('warnings: a duration given as a bare number below 1000', () => {
  const warnings = (env: NodeJS.ProcessEnv) => parseAllSettings(['--resources', 'r'], env)!.warnings;

  it('one per such variable, naming it, when the number in seconds is accepted too', () => {
    expect(warnings({ ROUTER_UPSTREAM_TIMEOUT: '5' })).toEqual([{
      variable: 'ROUTER_UPSTREAM_TIMEOUT',
      message: 'ROUTER_UPSTREAM_TIMEOUT=5 is read as 5 milliseconds: a number without a unit is milliseconds; write 5s for seconds, or 5ms to keep milliseconds without this warning',
    }]);
    expect(parseAllSettings(['--resources', 'r'], { ROUTER_UPSTREAM_TIMEOUT: '5' })!.upstreamTimeoutMs).toBe(5);
    expect(warnings({ ROUTER_DRAIN_TIMEOUT: '30', ACCESS_LOG_FLUSH_INTERVAL: '5', ROUTER_OUTLIER_BASE_EJECTION: '2' }).map((w) => w.variable))
      .toEqual(['ROUTER_DRAIN_TIMEOUT', 'ROUTER_OUTLIER_BASE_EJECTION', 'ACCESS_LOG_FLUSH_INTERVAL']);
  });

  it('none for 0, 1000 and more, a unit, or a number that in seconds is beyond the setting (RATE_LIMIT_REDIS_TIMEOUT=80: at most 60s)', () => {
    expect(warnings({})).toEqual([]);
    expect(warnings({ ROUTER_DRAIN_DELAY: '0', ROUTER_DRAIN_TIMEOUT: '30000', ROUTER_UPSTREAM_TIMEOUT: '5ms', ROUTER_POD_METRICS_INTERVAL: '2s' })).toEqual([]);
    expect(warnings({ RATE_LIMIT_REDIS_TIMEOUT: '80', ACCESS_LOG_FLUSH_INTERVAL: '250', RATE_LIMIT_REDIS_RECALL_WAIT: '500' })).toEqual([]);
    expect(warnings({ RATE_LIMIT_REDIS_TIMEOUT: '5', RATE_LIMIT_REDIS_RECALL_WAIT: '2' }).map((w) => w.variable)).toEqual(['RATE_LIMIT_REDIS_TIMEOUT', 'RATE_LIMIT_REDIS_RECALL_WAIT']);
    // 300 ms would be too short for a maximum ejection the base (5s) exceeds: refused, not warned.
    expect(() => warnings({ ROUTER_OUTLIER_MAX_EJECTION: '300' })).toThrow('ROUTER_OUTLIER_MAX_EJECTION');
  });

  it('DURATION_VARIABLES names every documented variable that reads a number as milliseconds', () => {
    // A variable is a duration when some number and the same number with "ms" are both accepted and read alike.
    const docs = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
    const names = new Set(docs.match(/\b(?:ROUTER|ACCESS_LOG|RATE_LIMIT|REDIS|OTEL)_[A-Z0-9_]*[A-Z0-9]\b/g));
    expect(names.size).toBeGreaterThan(40);
    const base = { ROUTER_RESOURCES: 'r.yaml', OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'traceidratio' }; // every variable read
    const read = (env: NodeJS.ProcessEnv) => {
      try {
        return JSON.stringify({ ...parseAllSettings([], { ...base, ...env }), warnings: [] });
      } catch {
        return null;
      }
    };
    const durations = [...names].filter((name) => ['250', '60000'].some((v) => read({ [name]: v }) !== null && read({ [name]: v }) === read({ [name]: `${v}ms` })));
    expect(durations.sort()).toEqual([...DURATION_VARIABLES].sort());
  });
});

describe('warnings: fair queueing places not a multiple of the workers', () => {
  const warnings = (workers: string, env: NodeJS.ProcessEnv) => parseAllSettings(['--resources', 'r', '--workers', workers], env)!.warnings;

  it('says how many requests each worker and the instance let through', () => {
    expect(warnings('4', { ROUTER_FAIRNESS_MAX_CONCURRENT: '6' })).toEqual([{
      variable: 'ROUTER_FAIRNESS_MAX_CONCURRENT',
      message: 'ROUTER_FAIRNESS_MAX_CONCURRENT=6 is not a multiple of the 4 workers: each worker lets 2 requests through to a ModelServer at once, 8 for the instance (docs/scheduling.md#fair-queueing)',
    }]);
    expect(warnings('4', { ROUTER_FAIRNESS_MAX_CONCURRENT: '8' })).toEqual([]);
    expect(warnings('3', {})).toEqual([]);
  });
});
