import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseRedisAddress } from '../../../src/ratelimit/redis/address.js';
import { parseRedisLimitSettings } from '../../../src/ratelimit/redis/settings.js';

describe('parseRedisLimitSettings', () => {
  it('defaults: local failure mode, 50 ms, no credentials, no TLS, no cluster, leases on, recall wait 500 ms; frozen', () => {
    const s = parseRedisLimitSettings({});
    expect(s).toEqual({ failureMode: 'local', timeoutMs: 50, username: null, password: null, tls: false, tlsCa: null, cluster: false, leases: true, recallWaitMs: 500 });
    expect(Object.isFrozen(s)).toBe(true);
  });

  it('reads every variable', () => {
    const s = parseRedisLimitSettings({
      RATE_LIMIT_REDIS_FAILURE_MODE: 'closed',
      RATE_LIMIT_REDIS_TIMEOUT: '1.5s',
      REDIS_USERNAME: 'router',
      REDIS_PASSWORD: 's3cret',
      REDIS_TLS: 'true',
      REDIS_CLUSTER: '1',
      RATE_LIMIT_REDIS_LEASES: 'true',
      RATE_LIMIT_REDIS_RECALL_WAIT: '1.5s',
    });
    expect(s).toEqual({ failureMode: 'closed', timeoutMs: 1500, username: 'router', password: 's3cret', tls: true, tlsCa: null, cluster: true, leases: true, recallWaitMs: 1500 });
    expect(parseRedisLimitSettings({ RATE_LIMIT_REDIS_RECALL_WAIT: '0' }).recallWaitMs).toBe(0);
    expect(parseRedisLimitSettings({ RATE_LIMIT_REDIS_RECALL_WAIT: '2s' }).recallWaitMs).toBe(2000);
    expect(() => parseRedisLimitSettings({ RATE_LIMIT_REDIS_LEASES: 'yes' })).toThrow('RATE_LIMIT_REDIS_LEASES: expected true or false; got "yes"');
    expect(parseRedisLimitSettings({ RATE_LIMIT_REDIS_TIMEOUT: '75' }).timeoutMs).toBe(75);
    expect(parseRedisLimitSettings({ RATE_LIMIT_REDIS_FAILURE_MODE: 'OPEN' }).failureMode).toBe('open');
  });

  it('errors name the variable and the allowed values', () => {
    expect(() => parseRedisLimitSettings({ RATE_LIMIT_REDIS_FAILURE_MODE: 'fail' })).toThrow(
      'RATE_LIMIT_REDIS_FAILURE_MODE: expected local, open or closed; got "fail"',
    );
    expect(() => parseRedisLimitSettings({ RATE_LIMIT_REDIS_TIMEOUT: 'soon' })).toThrow(/^RATE_LIMIT_REDIS_TIMEOUT: expected a duration from 1ms to 1m, .*got "soon" \(invalid duration/);
    expect(() => parseRedisLimitSettings({ RATE_LIMIT_REDIS_TIMEOUT: '0' })).toThrow(/RATE_LIMIT_REDIS_TIMEOUT: expected a duration from 1ms to 1m/);
    expect(() => parseRedisLimitSettings({ RATE_LIMIT_REDIS_TIMEOUT: '2m' })).toThrow(/from 1ms to 1m/);
    expect(() => parseRedisLimitSettings({ RATE_LIMIT_REDIS_RECALL_WAIT: 'a while' })).toThrow(/^RATE_LIMIT_REDIS_RECALL_WAIT: expected a duration from 0 to 2s, .*got "a while"/);
    // Longer than LEASES_FORFEIT_MS is of no use: the leases still out are forfeit by then.
    expect(() => parseRedisLimitSettings({ RATE_LIMIT_REDIS_RECALL_WAIT: '3s' })).toThrow('RATE_LIMIT_REDIS_RECALL_WAIT: expected a duration from 0 to 2s, such as 500ms or 50ms, or a number of milliseconds; got "3s"');
    expect(() => parseRedisLimitSettings({ REDIS_TLS: 'yes' })).toThrow('REDIS_TLS: expected true or false; got "yes"');
    expect(() => parseRedisLimitSettings({ REDIS_CLUSTER: 'on' })).toThrow('REDIS_CLUSTER: expected true or false; got "on"');
  });

  it('REDIS_TLS_CA_FILE: read at start; a missing file or one without a certificate names the variable', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ir-settings-'));
    try {
      const pem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
      writeFileSync(join(dir, 'ca.pem'), pem);
      writeFileSync(join(dir, 'key.pem'), '-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n');
      expect(parseRedisLimitSettings({ REDIS_TLS_CA_FILE: join(dir, 'ca.pem') }).tlsCa).toBe(pem);
      expect(() => parseRedisLimitSettings({ REDIS_TLS_CA_FILE: join(dir, 'missing.pem') })).toThrow(
        /^REDIS_TLS_CA_FILE: expected a readable PEM file of CA certificates; got ".*missing\.pem" \(cannot read it: ENOENT/,
      );
      expect(() => parseRedisLimitSettings({ REDIS_TLS_CA_FILE: join(dir, 'key.pem') })).toThrow(/^REDIS_TLS_CA_FILE: expected a PEM file of CA certificates; got ".*key\.pem" \(it holds no "-----BEGIN CERTIFICATE-----"\)$/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('parseRedisAddress', () => {
  it('host:port, [ipv6]:port and URLs', () => {
    expect(parseRedisAddress('redis.default.svc:6379', false)).toEqual({ nodes: [{ host: 'redis.default.svc', port: 6379 }], tls: false, db: 0, hadCredentials: false });
    expect(parseRedisAddress('[::1]:7000', false).nodes).toEqual([{ host: '::1', port: 7000 }]);
    expect(parseRedisAddress('redis://10.0.0.5', false).nodes).toEqual([{ host: '10.0.0.5', port: 6379 }]);
    expect(parseRedisAddress('rediss://cache.example:6380/2', false)).toEqual({ nodes: [{ host: 'cache.example', port: 6380 }], tls: true, db: 2, hadCredentials: false });
    expect(parseRedisAddress('redis://user:pw@h:1', false).hadCredentials).toBe(true);
  });

  it('cluster seed lists', () => {
    expect(parseRedisAddress('a:7000, b:7001,redis://c:7002', true).nodes).toEqual([
      { host: 'a', port: 7000 }, { host: 'b', port: 7001 }, { host: 'c', port: 7002 },
    ]);
    expect(() => parseRedisAddress('a:7000,b:7001', false)).toThrow(/several nodes \(Redis Cluster seed nodes\); that needs REDIS_CLUSTER=true/);
    expect(() => parseRedisAddress('redis://a:7000/3', true)).toThrow(/only database 0/);
  });

  it('rejects malformed addresses with the problem named', () => {
    expect(() => parseRedisAddress('', false)).toThrow(/empty/);
    expect(() => parseRedisAddress('redis-host', false)).toThrow(/expected host:port/);
    expect(() => parseRedisAddress('h:99999', false)).toThrow(/bad port "99999"/);
    expect(() => parseRedisAddress('::1:6379', false)).toThrow(/IPv6 address must be in brackets/);
    expect(() => parseRedisAddress('http://h:1', false)).toThrow(/redis:\/\/ or rediss:\/\//);
    expect(() => parseRedisAddress('redis://h:1/x', false)).toThrow(/database number/);
  });
});
