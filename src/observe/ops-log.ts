/**
 * The operational log of the primary and the workers: one line per event on stderr, JSON or
 * text (ROUTER_LOG_FORMAT, docs/configuration.md#operational-log). Not on the request path.
 *
 * text: `2026-01-01T00:00:00.000Z info [primary 1234] start: inference-router 0.1.0 starting: …`
 * json: `{"time":"…","level":"info","process":"primary","pid":1234,"event":"start","message":"…",…fields}`
 */

export type OpsLogFormat = 'json' | 'text';
export type OpsLevel = 'info' | 'warn' | 'error';
export type OpsValue = string | number | boolean | null | readonly string[];
export type OpsFields = Readonly<Record<string, OpsValue>>;

/** Keys of every JSON line; fields of the same name are left out rather than overwrite them. */
const RESERVED = new Set(['time', 'level', 'process', 'pid', 'event', 'message']);

export class OpsLog {
  constructor(
    private readonly format: OpsLogFormat,
    private readonly role: 'primary' | 'worker',
    private readonly write: (line: string) => void = (line) => { process.stderr.write(line); },
    private readonly now: () => Date = () => new Date(),
  ) {}

  info(event: string, message: string, fields?: OpsFields): void {
    this.write(this.line('info', event, message, fields));
  }

  warn(event: string, message: string, fields?: OpsFields): void {
    this.write(this.line('warn', event, message, fields));
  }

  error(event: string, message: string, fields?: OpsFields): void {
    this.write(this.line('error', event, message, fields));
  }

  /** One line, ending in a newline. */
  line(level: OpsLevel, event: string, message: string, fields?: OpsFields): string {
    const time = this.now().toISOString();
    if (this.format === 'json') {
      const o: Record<string, unknown> = { time, level, process: this.role, pid: process.pid, event, message };
      if (fields !== undefined) for (const k of Object.keys(fields)) if (!RESERVED.has(k)) o[k] = fields[k];
      return `${JSON.stringify(o)}\n`;
    }
    // One event, one line: a multi-line message (an error's stack) keeps its breaks escaped.
    return `${time} ${level} [${this.role} ${process.pid}] ${event}: ${message.replace(/\r?\n/g, '\\n')}\n`;
  }
}
