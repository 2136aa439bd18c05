import { describe, expect, it } from 'vitest';
import { alternatives, badSetting } from '../../src/setting-message.js';

describe('badSetting, alternatives', () => {
  it('words a refused setting one way: the name, what it takes, the value as given', () => {
    expect(badSetting('ACCESS_LOG_FORMAT', alternatives(['json', 'text']), 'xml')).toBe('ACCESS_LOG_FORMAT: expected json or text; got "xml"');
    expect(badSetting('X', alternatives(['local', 'open', 'closed']), ' a"b ')).toBe('X: expected local, open or closed; got " a\\"b "');
    expect(alternatives(['only'])).toBe('only');
  });
});
