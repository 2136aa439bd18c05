import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OpsLog } from '../../../src/observe/ops-log.js';
import { LINE_BYTES } from '../../../src/observe/ops-log-parts.js';

const at = (): Date => new Date('2026-01-02T03:04:05.006Z');

function collect(format: 'json' | 'text'): { log: OpsLog; lines: string[] } {
  const lines: string[] = [];
  return { log: new OpsLog(format, 'primary', (l) => lines.push(l), at), lines };
}

describe('OpsLog', () => {
  it('json: one object per line with time, level, process, pid, event, message and the fields', () => {
    const { log, lines } = collect('json');
    log.info('resources', 'loaded 2 routes', { routes: ['default/a', 'ml/b'], snapshot: 1 });
    log.warn('reload', 'rejected: bad\nfield', { applied: false, message: 'not overwritten' });
    expect(lines).toHaveLength(2);
    for (const l of lines) expect(l.endsWith('\n') && l.indexOf('\n') === l.length - 1).toBe(true);
    expect(JSON.parse(lines[0])).toEqual({
      time: '2026-01-02T03:04:05.006Z', level: 'info', process: 'primary', pid: process.pid,
      event: 'resources', message: 'loaded 2 routes', routes: ['default/a', 'ml/b'], snapshot: 1,
    });
    expect(JSON.parse(lines[1])).toMatchObject({ level: 'warn', event: 'reload', message: 'rejected: bad\nfield', applied: false });
  });

  it('text: time, level, process and pid, event, message; a multi-line message stays one line', () => {
    const { log, lines } = collect('text');
    log.error('exit', 'first\nsecond', { code: 2 });
    expect(lines).toEqual([`2026-01-02T03:04:05.006Z error [primary ${process.pid}] exit: first\\nsecond\n`]);
  });

  it('a message with a carriage return, an escape sequence, C1 controls or line separators cannot forge a line: text escapes them, JSON too', () => {
    const odd = 'route a\rb\x1b[31mred\u0085next\u2028sep\u2029par\x7fdel\ttab';
    const text = collect('text');
    text.log.warn('reload', odd);
    expect(text.lines).toEqual([`2026-01-02T03:04:05.006Z warn [primary ${process.pid}] reload: route a\\x0db\\x1b[31mred\\x85next\\u2028sep\\u2029par\\x7fdel\ttab\n`]);
    const json = collect('json');
    json.log.warn('reload', odd);
    expect(json.lines[0]).not.toMatch(/[\u0085\u2028\u2029\x7f\r\x1b]/);
    expect(JSON.parse(json.lines[0]).message).toBe(odd);
    // Split into parts, each within PIPE_BUF once escaped.
    for (const format of ['text', 'json'] as const) {
      const { log, lines } = collect(format);
      log.warn('reload', '\u2028'.repeat(3000));
      expect(lines.length).toBeGreaterThan(1);
      for (const l of lines) expect(Buffer.byteLength(l)).toBeLessThanOrEqual(LINE_BYTES);
    }
  });

  it('a line longer than PIPE_BUF is written as several whole lines, each within it, the message split between them', () => {
    const message = `${'é'.repeat(3000)} "quoted" \u0001 ${'x'.repeat(5000)} 😀 \ud800 end\nnext line`;
    for (const format of ['json', 'text'] as const) {
      const { log, lines } = collect(format);
      log.warn('reload', message, { applied: false, snapshot: 3 });
      expect(lines.length).toBeGreaterThan(2);
      for (const l of lines) {
        expect(Buffer.byteLength(l)).toBeLessThanOrEqual(LINE_BYTES);
        expect(l.indexOf('\n')).toBe(l.length - 1);
      }
      if (format === 'json') {
        const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
        expect(records.map((r) => r.message).join('')).toBe(message.replace('\ud800', '\ufffd') === message ? message : records.map((r) => r.message).join(''));
        expect(records.map((r) => r.message).join('')).toBe(JSON.parse(JSON.stringify(message)));
        expect(records.map((r) => [r.part, r.parts])).toEqual(records.map((_, i) => [i + 1, records.length]));
        expect(records[0]).toMatchObject({ level: 'warn', event: 'reload', applied: false, snapshot: 3, pid: process.pid });
        expect(records[1].applied).toBeUndefined();
      } else {
        const prefix = `2026-01-02T03:04:05.006Z warn [primary ${process.pid}] reload: `;
        const texts = lines.map((l, i) => {
          const mark = `${prefix}(part ${i + 1}/${lines.length}) `;
          expect(l.startsWith(mark)).toBe(true);
          return l.slice(mark.length, -1);
        });
        expect(texts.join('')).toBe(message.replace('\n', '\\n').replace('\u0001', '\\x01'));
      }
    }
  });

  it('for the journal: each line starts with its level as a syslog priority, parts each within PIPE_BUF with it', () => {
    for (const format of ['json', 'text'] as const) {
      const lines: string[] = [];
      const log = new OpsLog(format, 'worker', (l) => lines.push(l), at, true);
      const plain = new OpsLog(format, 'worker', () => undefined, at);
      log.info('start', 'listening');
      log.warn('drain', 'stopping');
      log.error('exit', 'port taken', { code: 2 });
      expect(lines.map((l) => l.slice(0, 3))).toEqual(['<6>', '<4>', '<3>']);
      // After the mark, the line as it is written without one.
      expect(lines.map((l) => l.slice(3))).toEqual([
        plain.line('info', 'start', 'listening'), plain.line('warn', 'drain', 'stopping'), plain.line('error', 'exit', 'port taken', { code: 2 }),
      ]);
      lines.length = 0;
      // As long as LINE_BYTES with the mark: one line; a byte more: parts.
      const fill = (n: number): string => 'x'.repeat(n - Buffer.byteLength(plain.line('warn', 'reload', '')) - 3);
      log.warn('reload', fill(LINE_BYTES));
      expect(lines).toHaveLength(1);
      expect(Buffer.byteLength(lines[0])).toBe(LINE_BYTES);
      lines.length = 0;
      log.warn('reload', fill(LINE_BYTES + 1));
      log.warn('reload', `${'é'.repeat(3000)} ${'x'.repeat(5000)}`);
      expect(lines.length).toBeGreaterThan(3);
      for (const l of lines) {
        expect(l.startsWith('<4>')).toBe(true);
        expect(Buffer.byteLength(l)).toBeLessThanOrEqual(LINE_BYTES);
        if (format === 'json') expect(JSON.parse(l.slice(3))).toMatchObject({ level: 'warn', event: 'reload' });
      }
    }
  });

  it('json: fields that alone would fill half a line go into the message as JSON text', () => {
    const { log, lines } = collect('json');
    const routes = Array.from({ length: 400 }, (_, i) => `default/route-${i}`);
    log.info('resources', 'loaded 400 routes', { routes });
    const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    for (const l of lines) expect(Buffer.byteLength(l)).toBeLessThanOrEqual(LINE_BYTES);
    expect(records.map((r) => r.message).join('')).toBe(`loaded 400 routes ${JSON.stringify({ routes })}`);
    expect(records.every((r) => r.routes === undefined)).toBe(true);
  });

  it('lines written whole by several processes on one pipe stay whole, long ones too (a slow reader)', async () => {
    const writer = new URL('./fixtures/ops-log-writer.mjs', import.meta.url).pathname;
    // Three processes share one stderr pipe, as node:cluster workers share the primary's.
    const child = spawn('sh', ['-c', `node ${writer} long & node ${writer} short & node ${writer} long & wait`], { stdio: ['ignore', 'ignore', 'pipe'] });
    const lines: string[] = [];
    let rest = '';
    child.stderr!.setEncoding('utf8').on('data', (d: string) => {
      const all = rest + d;
      const cut = all.lastIndexOf('\n') + 1;
      lines.push(...all.slice(0, cut).split('\n').slice(0, -1));
      rest = all.slice(cut);
      // A slow reader: the pipe fills, and the kernel would split a long write.
      child.stderr!.pause();
      setTimeout(() => child.stderr!.resume(), 1);
    });
    await new Promise((resolve) => child.on('close', resolve));
    expect(rest).toBe('');
    const parsed = lines.map((l) => JSON.parse(l) as { message: string; pid: number; part?: number });
    expect(parsed.filter((r) => r.message.startsWith('short')).length).toBe(3000);
    // Each long event (8,000 bytes of message) comes whole when its parts are joined, in order.
    const byPid = new Map<number, string[]>();
    for (const r of parsed) if (r.part !== undefined) {
      if (!byPid.has(r.pid)) byPid.set(r.pid, []);
      byPid.get(r.pid)!.push(r.message);
    }
    expect(byPid.size).toBe(2);
    for (const messages of byPid.values()) {
      const joined = messages.join('');
      expect(joined).toBe(Array.from({ length: 100 }, (_, i) => `long ${i} ${'L'.repeat(8000)}`).join(''));
    }
  }, 60_000);

  it('json: the line saying that lines were dropped (a reader behind) is a JSON line too', async () => {
    const writer = new URL('./fixtures/ops-log-writer.mjs', import.meta.url).pathname;
    const child = spawn(process.execPath, [writer, 'flood'], { stdio: ['ignore', 'pipe', 'pipe'] });
    // Not read until the child has logged everything (it says so on stdout): the 2.4 MB logged at
    // once overflow the writer's queue. (A timer instead let a child slow to start, on a loaded
    // machine, log to a reader already reading.)
    child.stderr!.pause();
    child.stdout!.once('data', () => child.stderr!.resume());
    let text = '';
    child.stderr!.setEncoding('utf8').on('data', (d: string) => { text += d; });
    await new Promise((resolve) => child.on('close', resolve));
    const records = text.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
    const note = records.find((r) => r.event === 'ops-log');
    expect(note).toMatchObject({ level: 'warn', process: 'worker', pid: child.pid, dropped: expect.any(Number) });
    expect(note!.message).toMatch(/^\d+ operational log line\(s\) dropped: stderr was not read$/);
  }, 30_000);

  it('a stderr pipe that is not read does not stop the process (given blocking, as a container runtime gives it)', async () => {
    const writer = new URL('./fixtures/ops-log-stalled.mjs', import.meta.url).pathname;
    const logged = join(mkdtempSync(join(tmpdir(), 'ops-log-')), 'logged');
    // The shell's pipe(2) is blocking, and `sleep` holds its read end without reading.
    const sh = spawn('sh', ['-c', `node ${writer} ${logged} 2>&1 >/dev/null | sleep 30`], { stdio: 'ignore', detached: true });
    try {
      const until = Date.now() + 5000;
      while (!existsSync(logged) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
      expect(existsSync(logged)).toBe(true);
    } finally {
      process.kill(-sh.pid!, 'SIGKILL');
    }
  }, 20_000);
});
