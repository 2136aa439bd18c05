/**
 * The operational log of the primary and the workers: one line per event on stderr, JSON or
 * text (ROUTER_LOG_FORMAT, docs/configuration.md#operational-log). Not on the request path.
 *
 * text: `2026-01-01T00:00:00.000Z info [primary 1234] start: inference-router 0.1.0 starting: …`
 * json: `{"time":"…","level":"info","process":"primary","pid":1234,"event":"start","message":"…",…fields}`
 *
 * A line longer than LINE_BYTES (PIPE_BUF) is written as several, each whole (ops-log-parts.ts), and
 * each line with one write(2) (ops-log-writer.ts).
 *
 * When stderr is systemd's stream to the journal (JOURNAL_STREAM), each line starts with its level
 * as a syslog priority, `<6>` info, `<4>` warn, `<3>` error, which journald takes off the line and
 * keeps as the entry's PRIORITY (systemd.exec(5), SyslogLevelPrefix=, on by default), so
 * `journalctl -p warning` finds the router's warnings and errors.
 */
import { Buffer } from 'node:buffer';
import { jsonStringBytes, LINE_BYTES, splitByBytes, textMessageBytes } from './ops-log-parts.js';
import { escapeJsonExtras, textEscape } from './access-log-escape.js';
import { droppedMessage, stderrLines } from './ops-log-writer.js';
import { isJournalStream } from './journal-stream.js';

export type OpsLogFormat = 'json' | 'text';
export type OpsLevel = 'info' | 'warn' | 'error';
/** A part's line of the operational log at the level it chooses: a change for the worse is `warn`, a return to normal `info`. */
export type LevelledLog = (level: 'info' | 'warn', message: string) => void;
export type OpsValue = string | number | boolean | null | readonly string[];
export type OpsFields = Readonly<Record<string, OpsValue>>;

/** Keys of every JSON line; fields of the same name are left out rather than overwrite them. */
const RESERVED = new Set(['time', 'level', 'process', 'pid', 'event', 'message', 'part', 'parts']);

/** Room kept in each part for `(part 99999/99999) ` or `,"part":99999,"parts":99999`. */
const PART_MARK_BYTES = 32;

/** Where lines go unless told otherwise: the process's stderr writer. */
const toStderr = (line: string): void => stderrLines().write(line);

/** Each level's syslog priority as journald reads it at a line's start (sd-daemon(3): SD_INFO, SD_WARNING, SD_ERR); all of 3 bytes. */
const JOURNAL_LEVEL: Readonly<Record<OpsLevel, string>> = { info: '<6>', warn: '<4>', error: '<3>' };

/** Whether stderr is systemd's stream to the journal. */
function stderrIsJournal(): boolean {
  return isJournalStream(2, process.env.JOURNAL_STREAM);
}

/** What a line of `level` written to stderr starts with: its priority when stderr is the journal's stream, else nothing. */
export function journalLevelMark(level: OpsLevel): string {
  return stderrIsJournal() ? JOURNAL_LEVEL[level] : '';
}

export class OpsLog {
  constructor(
    private readonly format: OpsLogFormat,
    private readonly role: 'primary' | 'worker',
    private readonly write: (line: string) => void = toStderr,
    private readonly now: () => Date = () => new Date(),
    /** Whether each line starts with its level for journald: by default, when the lines go to stderr and it is the journal's stream. */
    private readonly journalLevels: boolean = write === toStderr && stderrIsJournal(),
  ) {
    // The writer's note of lines it dropped is a line of this log, in its format.
    if (write === toStderr) stderrLines().droppedLine = (dropped) => this.levelMark('warn') + this.line('warn', 'ops-log', droppedMessage(dropped), { dropped });
  }

  info(event: string, message: string, fields?: OpsFields): void {
    this.emit('info', event, message, fields);
  }

  warn(event: string, message: string, fields?: OpsFields): void {
    this.emit('warn', event, message, fields);
  }

  error(event: string, message: string, fields?: OpsFields): void {
    this.emit('error', event, message, fields);
  }

  /**
   * The line, or its parts when it is longer than LINE_BYTES: each one write, so each stays whole;
   * each with its level for journald first when the journal reads them.
   */
  private emit(level: OpsLevel, event: string, message: string, fields?: OpsFields): void {
    const mark = this.levelMark(level);
    const line = this.line(level, event, message, fields);
    if (mark.length + Buffer.byteLength(line) <= LINE_BYTES) {
      this.write(mark + line);
      return;
    }
    for (const part of this.parts(level, event, message, fields, mark.length)) this.write(mark + part);
  }

  /** What a line of `level` starts with: its priority for journald, or nothing. */
  private levelMark(level: OpsLevel): string {
    return this.journalLevels ? JOURNAL_LEVEL[level] : '';
  }

  /**
   * Lines of at most LINE_BYTES (less `reserved` bytes each) holding one event: its message split
   * between them, each marked `part` of `parts`. JSON: the fields go with the first part, or, when
   * they alone would fill half a line, are appended to the message as JSON text.
   */
  parts(level: OpsLevel, event: string, message: string, fields?: OpsFields, reserved = 0): string[] {
    const time = this.now().toISOString();
    if (this.format === 'text') {
      const head = this.textHead(time, level, event);
      const budget = LINE_BYTES - reserved - 1 - Buffer.byteLength(head) - PART_MARK_BYTES;
      const pieces = splitByBytes(message, budget, textMessageBytes).map(textMessage);
      return pieces.map((p, i) => `${head}(part ${i + 1}/${pieces.length}) ${p}\n`);
    }
    const base = { time, level, process: this.role, pid: process.pid, event };
    let own = withFields({}, fields);
    let ownBytes = Buffer.byteLength(JSON.stringify(own));
    if (ownBytes > LINE_BYTES / 2) {
      message = `${message} ${JSON.stringify(own)}`;
      own = {};
      ownBytes = 2;
    }
    const budget = LINE_BYTES - reserved - 1 - Buffer.byteLength(JSON.stringify({ ...base, message: '' })) - ownBytes - PART_MARK_BYTES;
    const pieces = splitByBytes(message, budget, jsonStringBytes);
    return pieces.map((p, i) => `${jsonLine({ ...base, message: p, ...(i === 0 ? own : {}), part: i + 1, parts: pieces.length })}\n`);
  }

  /** One line, ending in a newline. */
  line(level: OpsLevel, event: string, message: string, fields?: OpsFields): string {
    const time = this.now().toISOString();
    if (this.format === 'json') {
      return `${jsonLine(withFields({ time, level, process: this.role, pid: process.pid, event, message }, fields))}\n`;
    }
    return `${this.textHead(time, level, event)}${textMessage(message)}\n`;
  }

  /** What a text line starts with, up to its message. */
  private textHead(time: string, level: OpsLevel, event: string): string {
    return `${time} ${level} [${this.role} ${process.pid}] ${event}: `;
  }
}

/** `o` with the fields added but those named as one of every line's keys (RESERVED). */
function withFields(o: Record<string, unknown>, fields: OpsFields | undefined): Record<string, unknown> {
  if (fields !== undefined) for (const k of Object.keys(fields)) if (!RESERVED.has(k)) o[k] = fields[k];
  return o;
}

/**
 * A message as a text line writes it: one event, one line. A multi-line message (an error's
 * stack) has its breaks written `\n`; the other control characters (a carriage return, which a
 * terminal would use to forge the start of a line, an escape sequence), DEL and the C1 controls
 * `\xHH`, the line and paragraph separators `\uHHHH`, as the access log writes them (some log
 * shippers and viewers take those for line breaks). A tab stays.
 */
function textMessage(message: string): string {
  const m = message.replace(/\r?\n/g, '\\n');
  return TEXT_CONTROL.test(m) ? m.replace(TEXT_CONTROL_ALL, textEscape) : m;
}

const TEXT_CONTROL = /[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]/;
const TEXT_CONTROL_ALL = /[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]/g;

/** A JSON line: JSON.stringify, with DEL, the C1 controls and U+2028/U+2029 escaped too (it leaves them raw). */
function jsonLine(o: Record<string, unknown>): string {
  return escapeJsonExtras(JSON.stringify(o));
}
