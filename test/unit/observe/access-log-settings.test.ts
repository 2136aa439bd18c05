import { describe, expect, it } from 'vitest';
import { DEFAULT_BUFFER_BYTES, parseAccessLogSettings } from '../../../src/observe/access-log-settings.js';

describe('parseAccessLogSettings', () => {
  it('defaults: enabled, text, stdout, 16 MiB, 100 ms flush interval', () => {
    const s = parseAccessLogSettings({});
    expect(s).toEqual({ enabled: true, format: 'text', output: 'stdout', bufferBytes: 16 * 1024 * 1024, flushIntervalMs: 100, journalSocket: '/run/systemd/journal/stdout' });
    expect(DEFAULT_BUFFER_BYTES).toBe(16 * 1024 * 1024);
    expect(Object.isFrozen(s)).toBe(true);
  });

  it('an empty variable means the default', () => {
    expect(parseAccessLogSettings({ ACCESS_LOG_FORMAT: '', ACCESS_LOG_ENABLED: '', ACCESS_LOG_OUTPUT: '' }))
      .toMatchObject({ enabled: true, format: 'text', output: 'stdout' });
  });

  it('reads every valid value', () => {
    expect(parseAccessLogSettings({
      ACCESS_LOG_ENABLED: 'false', ACCESS_LOG_FORMAT: 'json', ACCESS_LOG_OUTPUT: '/var/log/router/access.log',
      ACCESS_LOG_BUFFER_BYTES: '1048576', ACCESS_LOG_FLUSH_INTERVAL: '250ms',
      ACCESS_LOG_JOURNAL_SOCKET: '/run/journal-elsewhere/stdout',
    })).toEqual({ enabled: false, format: 'json', output: '/var/log/router/access.log', bufferBytes: 1048576, flushIntervalMs: 250, journalSocket: '/run/journal-elsewhere/stdout' });
    expect(parseAccessLogSettings({ ACCESS_LOG_FLUSH_INTERVAL: '0' }).flushIntervalMs).toBe(0);
    expect(parseAccessLogSettings({ ACCESS_LOG_FLUSH_INTERVAL: '40' }).flushIntervalMs).toBe(40);
    expect(parseAccessLogSettings({ ACCESS_LOG_FLUSH_INTERVAL: '1s' }).flushIntervalMs).toBe(1000);
    expect(parseAccessLogSettings({ ACCESS_LOG_FLUSH_INTERVAL: '10s' }).flushIntervalMs).toBe(10_000);
    expect(parseAccessLogSettings({ ACCESS_LOG_OUTPUT: 'stderr', ACCESS_LOG_FORMAT: 'text' }))
      .toMatchObject({ output: 'stderr', format: 'text' });
    expect(parseAccessLogSettings({ ACCESS_LOG_ENABLED: 'true' }).enabled).toBe(true);
  });

  it('the journal\'s stream socket: systemd\'s, that of the unit\'s LogNamespace= (LOG_NAMESPACE), a path given, or off', () => {
    expect(parseAccessLogSettings({}).journalSocket).toBe('/run/systemd/journal/stdout');
    expect(parseAccessLogSettings({ LOG_NAMESPACE: 'inference' }).journalSocket).toBe('/run/systemd/journal.inference/stdout');
    expect(parseAccessLogSettings({ LOG_NAMESPACE: 'inference', ACCESS_LOG_JOURNAL_SOCKET: '/x/stdout' }).journalSocket).toBe('/x/stdout');
    expect(parseAccessLogSettings({ ACCESS_LOG_JOURNAL_SOCKET: 'off' }).journalSocket).toBeNull();
    expect(parseAccessLogSettings({ ACCESS_LOG_JOURNAL_SOCKET: '' }).journalSocket).toBe('/run/systemd/journal/stdout');
  });

  it.each([
    ['ACCESS_LOG_ENABLED', 'yes', /^ACCESS_LOG_ENABLED: expected true or false; got "yes"$/],
    ['ACCESS_LOG_ENABLED', 'TRUE', /^ACCESS_LOG_ENABLED: expected true or false; got "TRUE"$/],
    ['ACCESS_LOG_FORMAT', 'xml', /^ACCESS_LOG_FORMAT: expected json or text; got "xml"$/],
    ['ACCESS_LOG_OUTPUT', ' stdout', /^ACCESS_LOG_OUTPUT: expected stdout, stderr or a file path, without white space around it; got " stdout"$/],
    ['ACCESS_LOG_BUFFER_BYTES', '16MiB', /^ACCESS_LOG_BUFFER_BYTES: expected an integer number of bytes of at least 65536; got "16MiB"$/],
    ['ACCESS_LOG_BUFFER_BYTES', '1024', /^ACCESS_LOG_BUFFER_BYTES: expected an integer .*; got "1024"$/],
    ['ACCESS_LOG_BUFFER_BYTES', '-5', /^ACCESS_LOG_BUFFER_BYTES: expected an integer .*; got "-5"$/],
    ['ACCESS_LOG_FLUSH_INTERVAL', 'soon', /^ACCESS_LOG_FLUSH_INTERVAL: expected a duration from 0 to 10s, .*got "soon"/],
    ['ACCESS_LOG_FLUSH_INTERVAL', '-1s', /^ACCESS_LOG_FLUSH_INTERVAL: expected a duration .*\(negative duration/],
    ['ACCESS_LOG_FLUSH_INTERVAL', '11s', /^ACCESS_LOG_FLUSH_INTERVAL: expected a duration from 0 to 10s, .*got "11s"$/],
    ['ACCESS_LOG_FLUSH_INTERVAL', '100 ms', /^ACCESS_LOG_FLUSH_INTERVAL: expected a duration/],
    ['ACCESS_LOG_JOURNAL_SOCKET', 'run/stdout', /^ACCESS_LOG_JOURNAL_SOCKET: expected off, or the absolute path of the journal's stdout socket \(at most 107 bytes\); got "run\/stdout"$/],
    ['ACCESS_LOG_JOURNAL_SOCKET', 'OFF', /^ACCESS_LOG_JOURNAL_SOCKET: expected off, or .*; got "OFF"$/],
    ['ACCESS_LOG_JOURNAL_SOCKET', `/${'s'.repeat(107)}`, /^ACCESS_LOG_JOURNAL_SOCKET: expected off, or .*at most 107 bytes/],
  ])('rejects %s=%j naming the variable and the allowed values', (name, value, message) => {
    expect(() => parseAccessLogSettings({ [name]: value })).toThrow(message);
  });
});
