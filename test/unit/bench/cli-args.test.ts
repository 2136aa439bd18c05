import { describe, expect, it } from 'vitest';
import { CommandLine, HELP, parseCommandLine, positiveNumber, UsageError, type CommandSpec } from '../../../bench/cli-args.js';

const SPEC: CommandSpec = {
  usage: 'Usage: node dist/bench/tool.js [<tree>] [--rounds N] [--node-args "FLAGS"] [--v8-threads]',
  values: ['--rounds', '--node-args'],
  flags: ['--v8-threads'],
  positionals: [0, 1],
};

const parse = (argv: string[], spec: CommandSpec = SPEC): CommandLine => {
  const line = parseCommandLine(argv, spec);
  if (line === HELP) throw new Error('parsed as --help');
  return line;
};

const usageError = (argv: string[], spec: CommandSpec = SPEC): string => {
  try {
    parseCommandLine(argv, spec);
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    expect((err as Error).message).not.toContain('\n');
    return (err as Error).message;
  }
  throw new Error(`no usage error for ${JSON.stringify(argv)}`);
};

describe('bench command lines', () => {
  it('--help and -h ask for help wherever an option may stand, even after a wrong argument', () => {
    for (const argv of [['--help'], ['-h'], ['.', '--rounds', '3', '--help'], ['--bogus', '-h'], ['a', 'b', 'c', '--help'], ['--rounds', '--help'], ['--node-args', '-h']]) {
      expect(parseCommandLine(argv, SPEC), argv.join(' ')).toBe(HELP);
    }
    expect(parseCommandLine(['--help'], { usage: 'Usage: none' })).toBe(HELP);
  });

  it('an option the tool does not take is an error, however it is spelt', () => {
    expect(usageError(['--bogus'])).toBe('unknown option "--bogus"');
    expect(usageError(['--round', '3'])).toBe('unknown option "--round"');
    expect(usageError(['--rounds=3'])).toBe('unknown option "--rounds=3"');
    expect(usageError(['-x'])).toBe('unknown option "-x"');
    expect(usageError(['--rounds'], { usage: 'u' })).toBe('unknown option "--rounds"');
  });

  it('an option without its value is an error, at the end or before another option', () => {
    expect(usageError(['--rounds'])).toBe('--rounds: expected a value');
    expect(usageError(['--rounds', '--v8-threads'])).toBe('--rounds: expected a value');
    expect(usageError(['--node-args', '--rounds', '3'])).toBe('--node-args: expected a value');
  });

  it('a value may start with a dash (Node flags, a negative number to be refused later)', () => {
    const line = parse(['--node-args', '--single-threaded-gc --max-semi-space-size=64', '--rounds', '-2']);
    expect(line.value('--node-args')).toBe('--single-threaded-gc --max-semi-space-size=64');
    expect(line.value('--rounds')).toBe('-2');
    expect(() => line.positiveNumber('--rounds')).toThrow(UsageError);
  });

  it('keeps positionals in order among the options, and options in the order given', () => {
    const two: CommandSpec = { ...SPEC, positionals: [2, 2] };
    const line = parse(['a:router-log', '--rounds', '3', '--v8-threads', 'b', '--rounds', '5'], two);
    expect(line.positionals).toEqual(['a:router-log', 'b']);
    expect(line.options).toEqual([['--rounds', '3'], ['--v8-threads', ''], ['--rounds', '5']]);
    expect(line.value('--rounds')).toBe('5');
    expect(line.has('--v8-threads')).toBe(true);
    expect(line.has('--node-args')).toBe(false);
    expect(line.value('--node-args')).toBeUndefined();
    expect(parse([]).positionals).toEqual([]);
  });

  it('too many or too few positionals is an error', () => {
    expect(usageError(['a', 'b'])).toBe('unexpected argument "b"');
    expect(usageError(['3'], { usage: 'u' })).toBe('unexpected argument "3"');
    expect(usageError(['a'], { ...SPEC, positionals: [2, 2] })).toBe('expected 2 arguments besides the options, got 1');
    expect(usageError([], { ...SPEC, positionals: [1, Infinity] })).toBe('expected at least 1 argument besides the options, got 0');
  });

  it('reads positive numbers; absent options are undefined, anything else not above 0 is an error', () => {
    const line = parse(['--rounds', '2.5']);
    expect(line.positiveNumber('--rounds')).toBe(2.5);
    expect(parse([]).positiveNumber('--rounds')).toBeUndefined();
    expect(positiveNumber('seconds', '4')).toBe(4);
    for (const bad of ['0', '-1', 'abc', '', 'Infinity', 'NaN']) {
      expect(() => positiveNumber('--rounds', bad), bad).toThrow(UsageError);
    }
    expect(() => parse(['--rounds', 'x']).positiveNumber('--rounds')).toThrow('--rounds: expected a positive number, got "x"');
  });
});
