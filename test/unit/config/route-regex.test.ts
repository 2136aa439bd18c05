import { describe, expect, it } from 'vitest';
import { nestedRepetition, routeRegex } from '../../../src/config/route-regex.js';

const matches = (pattern: string, value: string): boolean => routeRegex(pattern).test(value);

describe('routeRegex: a ModelRoute regex as the route API reads it (Go RE2, found anywhere)', () => {
  it('is found anywhere in the value; ^…$ matches the whole value', () => {
    expect(matches('premium', 'premium')).toBe(true);
    expect(matches('premium', 'x-premium-user')).toBe(true);
    expect(matches('chat', '/v1/chat/completions')).toBe(true);
    expect(matches('^premium$', 'x-premium-user')).toBe(false);
    // As in the reference router's own tests.
    expect(matches('^(acme|globex)-prod$', 'acme-prod')).toBe(true);
    expect(matches('^(acme|globex)-prod$', 'acme-prod-2')).toBe(false);
    expect(matches('^/v1/(chat/completions|completions)$', '/v1/completions')).toBe(true);
  });

  it('reads flags at the start, (?i) as JavaScript\'s i', () => {
    expect(matches('(?i)premium', 'PREMIUM')).toBe(true);
    expect(matches('(?is)^a.b$', 'A\nB')).toBe(true);
    expect(matches('(?m)^b$', 'a\nb')).toBe(true);
    expect(() => routeRegex('(?U)a+')).toThrow('flag U of (?U) is not supported (i, m and s are)');
    expect(() => routeRegex('a(?i)b')).toThrow('flags are read at the start of the pattern only');
    expect(() => routeRegex('(?i:a)b')).toThrow('flags are read at the start of the pattern only');
  });

  it('reads flags after anchors alone, and a scoped flag group spanning the whole pattern, as flags of the whole pattern', () => {
    expect(matches('^(?i)premium$', 'PREMIUM')).toBe(true);
    expect(matches('^(?i)premium$', 'x-premium')).toBe(false);
    expect(matches('\\A(?i)gold', 'GOLD-tier')).toBe(true);
    expect(matches('(?i:premium)', 'a PREMIUM user')).toBe(true);
    expect(matches('^(?i:premium|gold)$', 'Gold')).toBe(true);
    expect(matches('^(?i:premium|gold)$', 'gold-x')).toBe(false);
    // The alternation stays inside its group: `^(?i:a|b)$` is not `^a|b$`.
    expect(matches('^(?i:a|b)$', 'xb')).toBe(false);
    expect(matches('^(?i:a[)]b)$', 'A)B')).toBe(true);
    expect(() => routeRegex('(?U:a+)')).toThrow('flag U of (?U:…) is not supported (i, m and s are)');
    // A scoped group that does not span the whole pattern is not a flag of it.
    expect(() => routeRegex('^(?i:a)b$')).toThrow('flags are read at the start of the pattern only');
  });

  it('reads \\A, \\z, \\Q…\\E, (?P<name>…) and POSIX classes as RE2 does, not as other characters', () => {
    expect(matches('\\Aab\\z', 'ab')).toBe(true);
    expect(matches('\\Aab\\z', 'xab')).toBe(false);
    expect(matches('\\Aab\\z', 'abz')).toBe(false);
    expect(matches('(?m)\\Ab$', 'a\nb')).toBe(false);
    expect(matches('^\\Qa.b*\\E$', 'a.b*')).toBe(true);
    expect(matches('^\\Qa.b*\\E$', 'axbb')).toBe(false);
    expect(matches('^\\Qa.b', 'a.b')).toBe(true);
    expect(matches('^(?P<tier>gold|silver)$', 'gold')).toBe(true);
    expect(matches('^[[:digit:]]+$', '123')).toBe(true);
    expect(matches('^[[:digit:]]+$', '12a')).toBe(false);
    expect(matches('^[^[:space:]x]+$', 'ab')).toBe(true);
    expect(matches('^[^[:space:]x]+$', 'a b')).toBe(false);
    expect(matches('^[[:punct:]]+$', '!/[`~')).toBe(true);
    expect(matches('^[]a]+$', ']a')).toBe(true);
    expect(matches('^[^]a]+$', 'b')).toBe(true);
    expect(matches('^[^]a]+$', ']')).toBe(false);
    expect(() => routeRegex('[[:foo:]]')).toThrow('[:foo:] is not supported (unknown POSIX class)');
    expect(matches('^[[:^digit:]]+$', 'abc')).toBe(true);
    expect(matches('^[[:^digit:]]+$', 'ab1')).toBe(false);
    expect(() => routeRegex('[x[:^digit:]]')).toThrow('[:^digit:] is supported alone in its class only ([[:^digit:]]): write a negated class');
    expect(() => routeRegex('\\pL')).toThrow('\\p… (a Unicode class) is not supported');
    expect(() => routeRegex('\\x{41}')).toThrow('\\x{…} (a Unicode code point) is not supported');
  });

  it('leaves other escapes as they are and reports JavaScript\'s own syntax errors', () => {
    expect(matches('^a\\.b\\d$', 'a.b1')).toBe(true);
    expect(matches('^[a\\]z]$', ']')).toBe(true);
    expect(() => routeRegex('(unclosed')).toThrow(/Unterminated group/);
  });
});

describe('nestedRepetition: a group repeated without bound that repeats without bound inside', () => {
  it('names the nested repetition as written', () => {
    expect(nestedRepetition('(a+)+')).toBe('(a+)+');
    expect(nestedRepetition('^x-(\\w*,?)*$')).toBe('(\\w*,?)*');
    expect(nestedRepetition('(?:x+y?){2,}')).toBe('(?:x+y?){2,}');
    expect(nestedRepetition('((ab)*c)+')).toBe('((ab)*c)+');
    expect(nestedRepetition('(a+?)*?')).toBe('(a+?)*?');
    expect(nestedRepetition('(a)(b+)+')).toBe('(b+)+');
    expect(nestedRepetition('(?P<user>[a-z]+)+')).toBe('(?P<user>[a-z]+)+');
    // A rule of thumb (docs/configuration.md): named though each repetition begins with the comma.
    expect(nestedRepetition('^\\w+(,\\w+)*$')).toBe('(,\\w+)*');
  });

  it('passes what repeats once, or repeats a bounded part', () => {
    for (const p of ['a+b*', '(ab)+', '(a|b)*c', '^(acme|globex)-prod$', '(a{1,3})+', '((a)+)', '(a+)?', '(a+){2}', '(a+){1,5}', 'premium']) {
      expect(nestedRepetition(p), p).toBeNull();
    }
  });

  it('reads escapes, classes and \\Q…\\E as literals, not as groups or repetitions', () => {
    for (const p of ['\\(a+\\)+', '([a+])+', '([+*])+', '[(]a+[)]+', '\\Q(a+)+\\E', '([[:alpha:]])+', '([]+])+']) {
      expect(nestedRepetition(p), p).toBeNull();
    }
  });
});
