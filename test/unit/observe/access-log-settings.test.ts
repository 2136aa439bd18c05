import { describe, expect, it } from 'vitest';
import { DEFAULT_BUFFER_BYTES, parseAccessLogSettings } from '../../../src/observe/access-log-settings.js';

describe('parseAccessLogSettings', () => {
  it('defaults: enabled, text, stdout, 16 MiB', () => {
    const s = parseAccessLogSettings({});
    expect(s).toEqual({ enabled: true, format: 'text', output: 'stdout', bufferBytes: 16 * 1024 * 1024 });
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
      ACCESS_LOG_BUFFER_BYTES: '1048576',
    })).toEqual({ enabled: false, format: 'json', output: '/var/log/router/access.log', bufferBytes: 1048576 });
    expect(parseAccessLogSettings({ ACCESS_LOG_OUTPUT: 'stderr', ACCESS_LOG_FORMAT: 'text' }))
      .toMatchObject({ output: 'stderr', format: 'text' });
    expect(parseAccessLogSettings({ ACCESS_LOG_ENABLED: 'true' }).enabled).toBe(true);
  });

  it.each([
    ['ACCESS_LOG_ENABLED', 'yes', /^ACCESS_LOG_ENABLED must be one of true, false .*got "yes"/],
    ['ACCESS_LOG_ENABLED', 'TRUE', /^ACCESS_LOG_ENABLED must be one of true, false/],
    ['ACCESS_LOG_FORMAT', 'xml', /^ACCESS_LOG_FORMAT must be one of json, text .*got "xml"/],
    ['ACCESS_LOG_OUTPUT', ' stdout', /^ACCESS_LOG_OUTPUT must be stdout, stderr or a file path/],
    ['ACCESS_LOG_BUFFER_BYTES', '16MiB', /^ACCESS_LOG_BUFFER_BYTES must be an integer number of bytes >= 65536/],
    ['ACCESS_LOG_BUFFER_BYTES', '1024', /^ACCESS_LOG_BUFFER_BYTES must be an integer/],
    ['ACCESS_LOG_BUFFER_BYTES', '-5', /^ACCESS_LOG_BUFFER_BYTES must be an integer/],
  ])('rejects %s=%j naming the variable and the allowed values', (name, value, message) => {
    expect(() => parseAccessLogSettings({ [name]: value })).toThrow(message);
  });
});
