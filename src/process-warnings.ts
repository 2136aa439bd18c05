/**
 * Node's own warnings (`process.emitWarning`: a deprecated API, an experimental feature, too many
 * listeners on an emitter, …) as lines of the operational log: event `warning`, level `warn`, in
 * its format, instead of Node's text on stderr (`(node:1234) [DEP0005] DeprecationWarning: …`),
 * which a JSON log collector cannot parse.
 *
 * Node's flags still decide, from the process's own arguments and NODE_OPTIONS (the workers
 * inherit both): `--no-warnings` writes none (Node installs no printer then, nor is one installed
 * here); `--redirect-warnings=<file>` keeps Node's printer (they go to that file, as asked);
 * `--disable-warning=<code or type>` leaves those out; `--no-deprecation` is applied by Node
 * before any printer; `--trace-warnings` (and `--trace-deprecation` for deprecations) puts the
 * stack in the message. Node's printer is replaced only where it is found (its listener named
 * `onWarning`); otherwise it is left as it is, so a warning is never written twice or lost.
 */
import type { OpsLog } from './observe/ops-log.js';

/** Node's listener of `warning` that prints to stderr (lib/internal/process/warning.js). */
const NODE_PRINTER = 'onWarning';

/** Node's options that decide whether and where warnings are written. */
export interface WarningFlags {
  /** `--redirect-warnings` was given: Node writes warnings to that file. */
  readonly redirected: boolean;
  /** `--disable-warning` values: warning codes (`DEP0005`) or types (`ExperimentalWarning`). */
  readonly disabled: ReadonlySet<string>;
}

/** Installs the printer on this process (once per process); false when Node's is kept. */
export function warningsToOpsLog(ops: OpsLog, flags: WarningFlags = warningFlags(process.execArgv, process.env.NODE_OPTIONS)): boolean {
  const printers = process.listeners('warning').filter((l) => l.name === NODE_PRINTER);
  if (printers.length === 0 || flags.redirected) return false;
  for (const p of printers) process.removeListener('warning', p);
  process.on('warning', (w: unknown) => {
    if (!(w instanceof Error)) return;
    const line = warningLine(w, flags.disabled);
    if (line !== null) ops.warn('warning', line.message, line.fields);
  });
  return true;
}

/** The message and fields of warning `w`'s line, or null when it is not written (disabled, or a deprecation under --no-deprecation). */
export function warningLine(w: Error, disabled: ReadonlySet<string>): { message: string; fields: { type: string; code: string | null } } | null {
  const extra = w as Error & { code?: unknown; detail?: unknown };
  const code = typeof extra.code === 'string' ? extra.code : null;
  if (disabled.has(w.name) || (code !== null && disabled.has(code))) return null;
  const deprecation = w.name === 'DeprecationWarning';
  if (deprecation && process.noDeprecation) return null;
  // Set by --trace-warnings; not in @types/node.
  const trace = (process as { traceProcessWarnings?: boolean }).traceProcessWarnings === true || (deprecation && process.traceDeprecation);
  const detail = extra.detail;
  const text = trace && w.stack !== undefined ? w.stack : `${w.name}: ${w.message}`;
  const message = `${code === null ? '' : `[${code}] `}${text}${typeof detail === 'string' ? `\n${detail}` : ''}`;
  return { message, fields: { type: w.name, code } };
}

/** `--redirect-warnings` and `--disable-warning` among `execArgv` and NODE_OPTIONS (`nodeOptions`). */
export function warningFlags(execArgv: readonly string[], nodeOptions: string | undefined): WarningFlags {
  const args = [...nodeOptionArgs(nodeOptions ?? ''), ...execArgv];
  let redirected = false;
  const disabled = new Set<string>();
  for (let i = 0; i < args.length; i++) {
    const eq = args[i].indexOf('=');
    // Node takes `_` for `-` inside an option's name.
    const name = (eq < 0 ? args[i] : args[i].slice(0, eq)).replace(/_/g, '-');
    if (name !== '--redirect-warnings' && name !== '--disable-warning') continue;
    const value = eq < 0 ? args[++i] : args[i].slice(eq + 1);
    if (value === undefined) continue;
    if (name === '--redirect-warnings') redirected = true;
    else disabled.add(value);
  }
  return { redirected, disabled };
}

/** NODE_OPTIONS split as Node splits it: on white space, a double-quoted part kept whole (`\` escapes inside it). */
export function nodeOptionArgs(options: string): string[] {
  const out: string[] = [];
  let arg = '';
  let has = false;
  let quoted = false;
  for (let i = 0; i < options.length; i++) {
    const c = options[i];
    if (quoted) {
      if (c === '\\' && i + 1 < options.length) arg += options[++i];
      else if (c === '"') quoted = false;
      else arg += c;
    } else if (c === '"') {
      quoted = true;
      has = true;
    } else if (c === ' ' || c === '\t' || c === '\n') {
      if (has) out.push(arg);
      arg = '';
      has = false;
    } else {
      arg += c;
      has = true;
    }
  }
  if (has) out.push(arg);
  return out;
}
