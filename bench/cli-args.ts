/**
 * The command line of a bench tool: `--help` / `-h`, the options the tool declares, its
 * positionals. Anything else starting with `-`, an option without its value, a value that does
 * not fit, or too many or too few positionals is a usage error: one line and the usage on stderr,
 * exit status 2, before the tool starts anything.
 */

export interface CommandSpec {
  /** Usage line(s): printed on stdout for --help, on stderr after a usage error. */
  readonly usage: string;
  /** Options followed by a value (`--rounds N`): the next argument, which may start with '-' but not be another option of the tool or --help. */
  readonly values?: readonly string[];
  /** Options that stand alone (`--v8-threads`). */
  readonly flags?: readonly string[];
  /** How many positionals the tool takes, least and most (default none). */
  readonly positionals?: readonly [number, number];
}

/** A command line the tool cannot run with; the message is one line. */
export class UsageError extends Error {}

/** What `--help` or `-h` parses to. */
export const HELP = 'help';

const HELP_ARGS: ReadonlySet<string> = new Set(['--help', '-h']);

/** A parsed command line: options in the order given, positionals in order. */
export class CommandLine {
  constructor(
    /** Each option as given, `[name, value]`; a flag's value is ''. */
    readonly options: readonly (readonly [string, string])[],
    readonly positionals: readonly string[],
  ) {}

  /** Whether the option was given. */
  has(name: string): boolean {
    return this.options.some(([n]) => n === name);
  }

  /** The option's value (the last one when given twice), or undefined. */
  value(name: string): string | undefined {
    return this.options.findLast(([n]) => n === name)?.[1];
  }

  /** The option's value as a positive number, or undefined when the option is absent. */
  positiveNumber(name: string): number | undefined {
    const v = this.value(name);
    return v === undefined ? undefined : positiveNumber(name, v);
  }
}

/** `text` as a finite number above 0, or a UsageError naming `what`. */
export function positiveNumber(what: string, text: string): number {
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`${what}: expected a positive number, got ${JSON.stringify(text)}`);
  return n;
}

/** HELP when --help or -h stands where an option may; otherwise the command line, or a UsageError. */
export function parseCommandLine(argv: readonly string[], spec: CommandSpec): CommandLine | typeof HELP {
  const values = new Set(spec.values ?? []);
  const flags = new Set(spec.flags ?? []);
  const [least, most] = spec.positionals ?? [0, 0];
  const options: [string, string][] = [];
  const positionals: string[] = [];
  let error: string | null = null;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (HELP_ARGS.has(a)) return HELP;
    if (values.has(a)) {
      // The value may start with '-' (Node flags), but not be one of the tool's options or --help.
      const next = argv[i + 1];
      if (next === undefined || values.has(next) || flags.has(next) || HELP_ARGS.has(next)) error ??= `${a}: expected a value`;
      else options.push([a, argv[++i]]);
    } else if (flags.has(a)) options.push([a, '']);
    else if (a.startsWith('-')) error ??= `unknown option ${JSON.stringify(a)}`;
    else positionals.push(a);
  }
  if (error !== null) throw new UsageError(error);
  if (positionals.length > most) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[most])}`);
  if (positionals.length < least) throw new UsageError(`expected ${least === most ? least : `at least ${least}`} argument${least === 1 ? '' : 's'} besides the options, got ${positionals.length}`);
  return new CommandLine(options, positionals);
}

/**
 * The tool's settings, read from its command line by `read` (which throws a UsageError for a
 * value that does not fit). On --help prints the usage and exits 0; on a usage error, see
 * exitWithUsageError. Other errors propagate.
 */
export function readCommandLine<T>(spec: CommandSpec, read: (line: CommandLine) => T, argv: readonly string[] = process.argv.slice(2)): T {
  try {
    const line = parseCommandLine(argv, spec);
    if (line === HELP) {
      process.stdout.write(`${spec.usage}\n`);
      process.exit(0);
    }
    return read(line);
  } catch (err) {
    if (err instanceof UsageError) exitWithUsageError(spec, err.message);
    throw err;
  }
}

/** For a tool that takes no arguments (its settings, if any, come from the environment): --help only. */
export function takesNoArguments(usage: string): void {
  readCommandLine({ usage }, () => undefined);
}

/**
 * Prints `<tool>: <message>` and the usage on stderr and exits 2; also for a value found wrong
 * only after the command line was read (a scenario another tree's build must name).
 */
export function exitWithUsageError(spec: CommandSpec, message: string): never {
  const tool = (process.argv[1] ?? '').replace(/^.*\//, '').replace(/\.js$/, '');
  process.stderr.write(`${tool}: ${message}\n${spec.usage}\n`);
  process.exit(2);
}
