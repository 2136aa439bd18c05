import { describe, expect, it } from 'vitest';
import { DEFAULT_UPSTREAM_IDLE_RACE_MS, parseSettings, UsageError, type RouterSettings } from '../../../src/config/settings.js';
import { IDLE_RACE_MS } from '../../../src/upstream/http1/pool.js';

/** Reads `key` of the settings parsed with `variable` set to the value given (unset for undefined). */
const settingOf = <K extends keyof RouterSettings>(variable: string, key: K) => (v: string | undefined): RouterSettings[K] =>
  parseSettings(['--resources', 'r'], v === undefined ? {} : { [variable]: v })![key];

describe('parseSettings', () => {
  it('reads flags, with environment equivalents, flags winning', () => {
    const s = parseSettings(['--resources', 'r.yaml', '--port=9000', '--workers', '3'], { ROUTER_PORT: '7000', ROUTER_HOST: '127.0.0.1' })!;
    expect(s).toMatchObject({ source: 'file', resources: 'r.yaml', port: 9000, host: '127.0.0.1', workers: 3 });
    expect(Object.isFrozen(s)).toBe(true);
    const e = parseSettings([], { ROUTER_RESOURCES: 'e.yaml', ROUTER_PORT: '7000', ROUTER_WORKERS: '2' })!;
    expect(e).toMatchObject({ resources: 'e.yaml', port: 7000, workers: 2 });
  });

  it('has documented defaults', () => {
    const s = parseSettings(['--resources', 'r.yaml'], {})!;
    expect(s.port).toBe(8080);
    expect(s.host).toBe('0.0.0.0');
    // An IPv6 address as URLs write it, in brackets, is taken without them; IPv6 addresses end in digits after a colon too.
    expect(parseSettings(['--resources', 'r', '--host', '[::]'], {})!.host).toBe('::');
    expect(parseSettings(['--resources', 'r'], { ROUTER_HOST: '[fd00::5]' })!.host).toBe('fd00::5');
    expect(parseSettings(['--resources', 'r', '--host', 'fd00::5'], {})!.host).toBe('fd00::5');
    expect(parseSettings(['--resources', 'r', '--host', '::1'], {})!.host).toBe('::1');
    expect(s.workers).toBeGreaterThanOrEqual(1);
    expect(s.drainTimeoutMs).toBe(30_000);
    expect(s.upstreamTimeoutMs).toBe(300_000);
    expect(s.maxBodyBytes).toBe(16 * 1024 * 1024);
    expect(s.resourcesMaxBytes).toBe(4 * 1024 * 1024);
    expect(s.maxHeaderBytes).toBe(64 * 1024);
    expect(s.maxHeaderBytesSet).toBe(false);
    expect(parseSettings(['--resources', 'r.yaml'], { ROUTER_MAX_HEADER_BYTES: '8192' })).toMatchObject({ maxHeaderBytes: 8192, maxHeaderBytesSet: true });
    expect(() => parseSettings(['--resources', 'r.yaml'], { ROUTER_MAX_HEADER_BYTES: '512' })).toThrow('ROUTER_MAX_HEADER_BYTES: expected an integer from 1024 to 1048576; got "512"');
    expect(parseSettings(['--resources', 'r.yaml'], { ROUTER_RESOURCES_MAX_BYTES: '1000' })!.resourcesMaxBytes).toBe(1000);
    expect(s.apiGroup).toBe('networking.serving.volcano.sh');
    expect(s.localLeases).toBe(true);
    expect(parseSettings(['--resources', 'r.yaml'], { ROUTER_ALLOW_UWS_FALLBACK: 'false' })).not.toBeNull();
    expect(parseSettings(['--resources', 'r.yaml'], { RATE_LIMIT_LOCAL_LEASES: 'false' })!.localLeases).toBe(false);
  });

  it('takes a port from 1 to 65535: 0 would have each worker listen on a port of its own', () => {
    expect(() => parseSettings(['--resources', 'r.yaml', '--port', '0'], {})).toThrow('--port: expected an integer from 1 to 65535; got "0"');
    expect(() => parseSettings(['--resources', 'r.yaml'], { ROUTER_PORT: '65536' })).toThrow('ROUTER_PORT: expected an integer from 1 to 65535; got "65536"');
    expect(parseSettings(['--resources', 'r.yaml', '--port', '1'], {})!.port).toBe(1);
  });

  it('suggests no flag for an unknown one near none of them', () => {
    for (const arg of ['--bogus', '--listen', '-p', '--config']) {
      expect(() => parseSettings(['--resources', 'r', arg], {})).toThrow(new RegExp(`^unknown option "${arg}"$`));
    }
  });

  it('refuses a bad variable that a flag overrides, as if no flag were given, saying the flag is given too', () => {
    const over = (flag: string) => ` (${flag} overrides it, but a bad value is refused all the same)`;
    expect(() => parseSettings(['--resources', 'r', '--port', '18094'], { ROUTER_PORT: 'abc' }))
      .toThrow(new UsageError(`ROUTER_PORT: expected an integer from 1 to 65535; got "abc"${over('--port')}`));
    expect(() => parseSettings(['--resources', 'r', '--workers=2'], { ROUTER_WORKERS: '0' }))
      .toThrow(new UsageError(`ROUTER_WORKERS: expected an integer from 1 to 256; got "0"${over('--workers')}`));
    expect(() => parseSettings(['--resources', 'r', '--host', '127.0.0.1'], { ROUTER_HOST: 'localhost:9000' }))
      .toThrow(`ROUTER_HOST: expected the address alone ("localhost"), the port is --port (ROUTER_PORT); got "localhost:9000"${over('--host')}`);
    // Both bad: the flag is named, as it is the value that would be used.
    expect(() => parseSettings(['--resources', 'r', '--port', 'x'], { ROUTER_PORT: 'abc' })).toThrow(/^--port: expected an integer from 1 to 65535; got "x"$/);
    // Both good, or the variable empty (unset): the flag's value.
    expect(parseSettings(['--resources', 'r', '--port', '18094', '--host', '::1', '--workers', '2'], { ROUTER_PORT: '9000', ROUTER_HOST: '[::]', ROUTER_WORKERS: '' }))
      .toMatchObject({ port: 18094, host: '::1', workers: 2 });
  });

  it('returns null for --help', () => {
    expect(parseSettings(['--help'], {})).toBeNull();
  });

  it.each([
    [['--bogus'], {}, 'unknown option "--bogus"'],
    [['resources.yaml'], {}, 'unexpected argument "resources.yaml": the router takes options only; give a resources file as --resources resources.yaml'],
    [['--resource', 'r.yaml'], {}, 'unknown option "--resource"; did you mean --resources?'],
    [['--resource=r.yaml'], {}, 'unknown option "--resource=r.yaml"; did you mean --resources?'],
    [['--kube'], {}, 'unknown option "--kube"; did you mean --kubernetes?'],
    [['-v'], {}, 'unknown option "-v"; did you mean -V (--version)?'],
    [['--resources', 'r', '--worker', '2'], {}, 'unknown option "--worker"; did you mean --workers?'],
    [['--resources', 'r', '--prot', '18090'], {}, 'unknown option "--prot"; did you mean --port?'],
    [['--resources', 'r', '--hots=::'], {}, 'unknown option "--hots=::"; did you mean --host?'],
    [['--resources', 'r', '--wokrers', '2'], {}, 'unknown option "--wokrers"; did you mean --workers?'],
    [['--resources', 'r', '--kubernets'], {}, 'unknown option "--kubernets"; did you mean --kubernetes?'],
    [['--resources', 'r', '--verison'], {}, 'unknown option "--verison"; did you mean --version?'],
    [['--resources', 'r', '-port', '18090'], {}, 'unknown option "-port"; did you mean --port?'],
    [['--resources', 'r', '--Port', '18090'], {}, 'unknown option "--Port"; did you mean --port?'],
    [['--resources'], {}, '--resources needs a value'],
    [['--resources', 'r', '--host', ''], {}, '--host needs a value, got an empty one'],
    [['--resources', 'r', '--host', '0.0.0.0:8080'], {}, '--host: expected the address alone ("0.0.0.0"), the port is --port (ROUTER_PORT); got "0.0.0.0:8080"'],
    [['--resources', 'r'], { ROUTER_HOST: 'localhost:9000' }, 'ROUTER_HOST: expected the address alone ("localhost")'],
    [['--resources', 'r', '--host', '[::'], {}, '--host: expected an address or host name (an IPv6 address with or without brackets); got "[::"'],
    [['--resources', 'r', '--host', '[localhost]'], {}, '--host: expected an address or host name'],
    [['--resources', 'r', '--port='], {}, '--port needs a value, got an empty one'],
    [['--resources', 'r', '--workers', ' '], {}, '--workers needs a value, got an empty one'],
    [['--resources', ''], {}, '--resources needs a value, got an empty one'],
    [[], {}, 'no resources'],
    [['--resources', 'r', '--port', '70000'], {}, '--port: expected an integer from 1 to 65535; got "70000"'],
    [['--resources', 'r'], { ROUTER_WORKERS: '0' }, 'ROUTER_WORKERS: expected an integer from 1 to 256; got "0"'],
    [['--resources', 'r'], { ROUTER_DRAIN_TIMEOUT: 'soon' }, 'ROUTER_DRAIN_TIMEOUT: expected a duration'],
    [['--resources', 'r'], { ROUTER_SOURCE: 'etcd' }, 'ROUTER_SOURCE: expected file or kubernetes; got "etcd"'],
    [['--resources', 'r', '--kubernetes'], {}, '--resources and --kubernetes exclude each other'],
    [['--resources', 'r'], { ROUTER_SOURCE: 'kubernetes' }, '--resources and ROUTER_SOURCE=kubernetes exclude each other'],
    [['--resources', 'r'], { RATE_LIMIT_LOCAL_LEASES: 'off' }, 'RATE_LIMIT_LOCAL_LEASES: expected true or false; got "off"'],
    [['--resources', 'r'], { ROUTER_RESOURCES_MAX_BYTES: '4MiB' }, 'ROUTER_RESOURCES_MAX_BYTES: expected an integer from 1 to 1073741824; got "4MiB"'],
    [['--resources', 'r'], { ROUTER_RESOURCES_MAX_BYTES: '0' }, 'ROUTER_RESOURCES_MAX_BYTES: expected an integer from 1 to 1073741824; got "0"'],
    [['--resources', 'r'], { ROUTER_ALLOW_UWS_FALLBACK: 'yes' }, 'ROUTER_ALLOW_UWS_FALLBACK: expected true or false; got "yes"'],
    [['--resources', 'r'], { ROUTER_ALLOW_UWS_FALLBACK: 'true' }, 'ROUTER_ALLOW_UWS_FALLBACK=true is no longer supported: the router runs only on a native uWebSockets.js build'],
  ] as const)('rejects %j %j', (argv, env, msg) => {
    expect(() => parseSettings(argv, env)).toThrow(UsageError);
    expect(() => parseSettings(argv, env)).toThrow(msg);
  });

  it('selects the kubernetes source by flag or env', () => {
    expect(parseSettings(['--kubernetes'], {})!.source).toBe('kubernetes');
    expect(parseSettings([], { ROUTER_SOURCE: 'kubernetes', ROUTER_NAMESPACE: 'ml' })).toMatchObject({ source: 'kubernetes', namespace: 'ml' });
  });
});

describe('parseCommand, ROUTER_DRAIN_DELAY, ROUTER_LOG_FORMAT', () => {
  it('finds --help or --version, not a flag value that looks like one', async () => {
    const { parseCommand } = await import('../../../src/config/settings.js');
    expect(parseCommand(['--version'])).toBe('version');
    expect(parseCommand(['-V'])).toBe('version');
    expect(parseCommand(['--resources', 'r.yaml', '--help', '--version'])).toBe('help');
    expect(parseCommand(['--host', '--version'])).toBe('run');
    expect(parseCommand(['--resources', 'r.yaml'])).toBe('run');
  });

  it('ROUTER_WORKER_SEMI_SPACE_MB: default 16, 0 (V8 sizes it) allowed, validated', () => {
    expect(parseSettings(['--resources', 'r'], {})!.workerSemiSpaceMb).toBe(16);
    expect(parseSettings(['--resources', 'r'], { ROUTER_WORKER_SEMI_SPACE_MB: '0' })!.workerSemiSpaceMb).toBe(0);
    expect(parseSettings(['--resources', 'r'], { ROUTER_WORKER_SEMI_SPACE_MB: '64' })!.workerSemiSpaceMb).toBe(64);
    expect(() => parseSettings(['--resources', 'r'], { ROUTER_WORKER_SEMI_SPACE_MB: '16MB' })).toThrow('ROUTER_WORKER_SEMI_SPACE_MB: expected an integer from 0 to 256; got "16MB"');
    expect(() => parseSettings(['--resources', 'r'], { ROUTER_WORKER_SEMI_SPACE_MB: '512' })).toThrow(UsageError);
  });

  it('ROUTER_UPSTREAM_IDLE_TIMEOUT: default 4 s, a duration from 100 ms to 1 h', () => {
    const idle = settingOf('ROUTER_UPSTREAM_IDLE_TIMEOUT', 'upstreamIdleTimeoutMs');
    expect(idle(undefined)).toBe(4000);
    expect(idle('')).toBe(4000);
    expect(idle('30s')).toBe(30_000);
    expect(idle('250ms')).toBe(250);
    expect(idle('1h')).toBe(3_600_000);
    expect(() => idle('50ms')).toThrow(UsageError);
    expect(() => idle('50ms')).toThrow('ROUTER_UPSTREAM_IDLE_TIMEOUT');
    expect(() => idle('2h')).toThrow(UsageError);
    expect(() => idle('soon')).toThrow(UsageError);
  });

  it('ROUTER_UPSTREAM_CONNECT_TIMEOUT: default 5 s, a duration from 100 ms to 5 m', () => {
    const connect = settingOf('ROUTER_UPSTREAM_CONNECT_TIMEOUT', 'upstreamConnectTimeoutMs');
    expect(connect(undefined)).toBe(5000);
    expect(connect('')).toBe(5000);
    expect(connect('1s')).toBe(1000);
    expect(connect('100ms')).toBe(100);
    expect(connect('5m')).toBe(300_000);
    expect(() => connect('50ms')).toThrow('ROUTER_UPSTREAM_CONNECT_TIMEOUT');
    expect(() => connect('6m')).toThrow(UsageError);
    expect(() => connect('0')).toThrow(UsageError);
    expect(() => connect('soon')).toThrow(UsageError);
  });

  it('ROUTER_NAMESPACE: unset or empty, all namespaces; else a namespace name (a DNS label)', () => {
    const ns = settingOf('ROUTER_NAMESPACE', 'namespace');
    expect(ns(undefined)).toBeNull();
    expect(ns('')).toBeNull();
    expect(ns('kthena-system')).toBe('kthena-system');
    expect(ns('a'.repeat(63))).toBe('a'.repeat(63));
    expect(() => ns('ML')).toThrow('ROUTER_NAMESPACE: expected a Kubernetes namespace name');
    expect(() => ns('a'.repeat(64))).toThrow(UsageError);
    expect(() => ns('-ml')).toThrow(UsageError);
    expect(() => ns('ml/x')).toThrow(UsageError);
  });

  it('ROUTER_UPSTREAM_IDLE_RACE: default 20 ms (the pool\'s own default), a duration from 0 (never) to 10 s', () => {
    const race = settingOf('ROUTER_UPSTREAM_IDLE_RACE', 'upstreamIdleRaceMs');
    expect(race(undefined)).toBe(20);
    expect(DEFAULT_UPSTREAM_IDLE_RACE_MS).toBe(IDLE_RACE_MS);
    expect(race('')).toBe(20);
    expect(race('0')).toBe(0);
    expect(race('250ms')).toBe(250);
    expect(race('10s')).toBe(10_000);
    expect(() => race('11s')).toThrow('ROUTER_UPSTREAM_IDLE_RACE');
    expect(() => race('-1ms')).toThrow(UsageError);
    expect(() => race('soon')).toThrow(UsageError);
  });

  it('ROUTER_WORKER_WATCHDOG: default 30 s, 0 (never) or a duration from 3 s to 10 min', () => {
    const dog = settingOf('ROUTER_WORKER_WATCHDOG', 'workerWatchdogMs');
    expect(dog(undefined)).toBe(30_000);
    expect(dog('')).toBe(30_000);
    expect(dog('0')).toBe(0);
    expect(dog('3s')).toBe(3_000);
    expect(dog('10m')).toBe(600_000);
    expect(() => dog('1s')).toThrow('ROUTER_WORKER_WATCHDOG: expected 0 (never) or a duration from 3s to 10m, such as 30s; got "1s"');
    expect(() => dog('11m')).toThrow('ROUTER_WORKER_WATCHDOG');
    expect(() => dog('soon')).toThrow(UsageError);
  });

  it('ROUTER_UPSTREAM_CONNECTIONS: default 1024 per worker and pod, 1 to 65535', () => {
    expect(parseSettings(['--resources', 'r'], {})!.upstreamConnections).toBe(1024);
    expect(parseSettings(['--resources', 'r'], { ROUTER_UPSTREAM_CONNECTIONS: '' })!.upstreamConnections).toBe(1024);
    expect(parseSettings(['--resources', 'r'], { ROUTER_UPSTREAM_CONNECTIONS: '4096' })!.upstreamConnections).toBe(4096);
    expect(() => parseSettings(['--resources', 'r'], { ROUTER_UPSTREAM_CONNECTIONS: '0' })).toThrow('ROUTER_UPSTREAM_CONNECTIONS: expected an integer from 1 to 65535; got "0"');
    expect(() => parseSettings(['--resources', 'r'], { ROUTER_UPSTREAM_CONNECTIONS: 'many' })).toThrow(UsageError);
  });

  it('ROUTER_DRAIN_DELAY: default 5s, 0 allowed, validated', () => {
    expect(parseSettings(['--resources', 'r'], {})!.drainDelayMs).toBe(5000);
    expect(parseSettings(['--resources', 'r'], { ROUTER_DRAIN_DELAY: '0' })!.drainDelayMs).toBe(0);
    expect(parseSettings(['--resources', 'r'], { ROUTER_DRAIN_DELAY: '250ms' })!.drainDelayMs).toBe(250);
    expect(() => parseSettings(['--resources', 'r'], { ROUTER_DRAIN_DELAY: 'soon' })).toThrow('ROUTER_DRAIN_DELAY: expected a duration');
    expect(() => parseSettings(['--resources', 'r'], { ROUTER_DRAIN_DELAY: '1h' })).toThrow('ROUTER_DRAIN_DELAY');
  });

  it('ROUTER_LOG_FORMAT: json or text, default ACCESS_LOG_FORMAT\'s choice', () => {
    expect(parseSettings(['--resources', 'r'], {})!.logFormat).toBe('text');
    expect(parseSettings(['--resources', 'r'], { ACCESS_LOG_FORMAT: 'json' })!.logFormat).toBe('json');
    expect(parseSettings(['--resources', 'r'], { ACCESS_LOG_FORMAT: 'json', ROUTER_LOG_FORMAT: 'text' })!.logFormat).toBe('text');
    expect(parseSettings(['--resources', 'r'], { ROUTER_LOG_FORMAT: 'json' })!.logFormat).toBe('json');
    expect(() => parseSettings(['--resources', 'r'], { ROUTER_LOG_FORMAT: 'xml' })).toThrow(UsageError);
    expect(() => parseSettings(['--resources', 'r'], { ROUTER_LOG_FORMAT: 'xml' })).toThrow('ROUTER_LOG_FORMAT: expected json or text; got "xml"');
  });
});
