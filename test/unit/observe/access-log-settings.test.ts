import { describe, expect, it } from 'vitest';
import { DEFAULT_BUFFER_BYTES, parseAccessLogSettings } from '../../../src/observe/access-log-settings.js';

describe('parseAccessLogSettings', () => {
  it('defaults: enabled, text, stdout, 16 MiB, 100 ms flush interval', () => {
    const s = parseAccessLogSettings({});
    expect(s).toEqual({ enabled: true, format: 'text', output: 'stdout', bufferBytes: 16 * 1024 * 1024, flushIntervalMs: 100 });
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
    })).toEqual({ enabled: false, format: 'json', output: '/var/log/router/access.log', bufferBytes: 1048576, flushIntervalMs: 250 });
    expect(parseAccessLogSettings({ ACCESS_LOG_FLUSH_INTERVAL: '0' }).flushIntervalMs).toBe(0);
    expect(parseAccessLogSettings({ ACCESS_LOG_FLUSH_INTERVAL: '40' }).flushIntervalMs).toBe(40);
    expect(parseAccessLogSettings({ ACCESS_LOG_FLUSH_INTERVAL: '1s' }).flushIntervalMs).toBe(1000);
    expect(parseAccessLogSettings({ ACCESS_LOG_FLUSH_INTERVAL: '10s' }).flushIntervalMs).toBe(10_000);
    expect(parseAccessLogSettings({ ACCESS_LOG_OUTPUT: 'stderr', ACCESS_LOG_FORMAT: 'text' }))
      .toMatchObject({ output: 'stderr', format: 'text' });
    expect(parseAccessLogSettings({ ACCESS_LOG_ENABLED: 'true' }).enabled).toBe(true);
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
  ])('rejects %s=%j naming the variable and the allowed values', (name, value, message) => {
    expect(() => parseAccessLogSettings({ [name]: value })).toThrow(message);
  });
});
