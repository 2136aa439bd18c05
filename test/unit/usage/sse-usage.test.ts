import { describe, expect, it } from 'vitest';
import { SseUsageScanner } from '../../../src/api/openai-sse-usage.js';

const USAGE = { prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 };

function chatChunk(content: string): string {
  return JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: null }], usage: null });
}
function completionChunk(text: string): string {
  return JSON.stringify({ id: 'c1', object: 'text_completion', model: 'm', choices: [{ index: 0, text, finish_reason: null }] });
}
const usageChunk = JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: 'm', choices: [], usage: USAGE });

/** A stream as events; `eol` is the line end used throughout. */
function stream(events: string[], eol: string): { all: string; withoutUsage: string } {
  const encoded = events.map((e) => `${e}${eol}${eol}`);
  return {
    all: encoded.join(''),
    withoutUsage: encoded.filter((_, i) => events[i] !== `data: ${usageChunk}`).join(''),
  };
}

const chatEvents = [
  ': keep-alive comment',
  `data: ${chatChunk('Grüße ')}`,
  `data: ${chatChunk('🙂 naïve')}`,
  `data: ${chatChunk(' end')}`,
  `data: ${usageChunk}`,
  'data: [DONE]',
];
const chatText = 'Grüße 🙂 naïve end';

interface Run { out: Buffer; scanner: SseUsageScanner }

/** Feeds `bytes` cut at the given offsets; checks keep mode returns the same chunk objects. */
function feed(bytes: Buffer, cuts: number[], strip: boolean, maxEventBytes?: number): Run {
  const scanner = new SseUsageScanner({ stripUsageChunk: strip, maxEventBytes });
  const parts: Buffer[] = [];
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    const chunk = Buffer.from(bytes.subarray(from, cut));
    const out = scanner.push(chunk);
    if (!strip) expect(out).toBe(chunk);
    parts.push(Buffer.from(out));
    chunk.fill(0x21); // the caller may reuse its buffer: the scanner must have copied what it keeps
    from = cut;
  }
  parts.push(scanner.end());
  return { out: Buffer.concat(parts), scanner };
}

function everySplit(bytes: Buffer, strip: boolean, check: (run: Run, byByte: boolean) => void, maxEventBytes?: number): void {
  for (let at = 0; at <= bytes.length; at++) check(feed(bytes, [at], strip, maxEventBytes), false);
  // Single bytes: every boundary at once.
  check(feed(bytes, Array.from({ length: bytes.length }, (_, i) => i), strip, maxEventBytes), true);
}

describe('SseUsageScanner', () => {
  for (const eol of ['\n', '\r\n', '\r']) {
    const name = JSON.stringify(eol);
    const { all, withoutUsage } = stream(chatEvents, eol);
    const bytes = Buffer.from(all);

    it(`strip mode removes only the usage chunk, at every split (${name})`, () => {
      everySplit(bytes, true, ({ out, scanner }) => {
        expect(out.toString()).toBe(withoutUsage);
        expect(scanner.promptTokens).toBe(11);
        expect(scanner.completionTokens).toBe(3);
        expect(scanner.text).toBe(chatText);
        expect(scanner.strippedEvents).toBe(1);
      });
    });

    it(`keep mode forwards every byte and still reads usage, at every split (${name})`, () => {
      everySplit(bytes, false, ({ out, scanner }) => {
        expect(out.equals(bytes)).toBe(true);
        expect(scanner.promptTokens).toBe(11);
        expect(scanner.completionTokens).toBe(3);
        expect(scanner.text).toBe(chatText);
      });
    });
  }

  it('strip mode forwards complete events at once and holds only the partial one', () => {
    const scanner = new SseUsageScanner({ stripUsageChunk: true });
    const first = `data: ${chatChunk('a')}\n\n`;
    const partial = `data: ${chatChunk('b')}`;
    expect(scanner.push(Buffer.from(first + partial)).toString()).toBe(first);
    expect(scanner.push(Buffer.from('\n')).toString()).toBe('');
    expect(scanner.push(Buffer.from('\ndata: [DONE]\n\n')).toString()).toBe(`${partial}\n\ndata: [DONE]\n\n`);
    expect(scanner.text).toBe('ab');
  });

  it('strip mode hands back the very chunk when all of it goes out (no copy, no new view)', () => {
    const scanner = new SseUsageScanner({ stripUsageChunk: true });
    const whole = Buffer.from(`data: ${chatChunk('a')}\n\ndata: ${chatChunk('b')}\r\n\r\n`);
    expect(scanner.push(whole)).toBe(whole);
    const withUsage = Buffer.from(`data: ${chatChunk('c')}\n\ndata: ${usageChunk}\n\n`);
    const out = scanner.push(withUsage);
    expect(out).not.toBe(withUsage);
    expect(out.toString()).toBe(`data: ${chatChunk('c')}\n\n`);
  });

  it('usage on the last content chunk is read; strip mode cuts the usage member out of it, keep mode forwards it', () => {
    const last = JSON.stringify({ object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'z' } }], usage: USAGE });
    const cut = JSON.stringify({ object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'z' } }] });
    const { all } = stream([`data: ${chatChunk('y')}`, `data: ${last}`, 'data: [DONE]'], '\n');
    const { all: withoutUsage } = stream([`data: ${chatChunk('y')}`, `data: ${cut}`, 'data: [DONE]'], '\n');
    for (const strip of [true, false]) {
      everySplit(Buffer.from(all), strip, ({ out, scanner }) => {
        expect(out.toString()).toBe(strip ? withoutUsage : all);
        expect(scanner.completionTokens).toBe(3);
        expect(scanner.text).toBe('yz');
        expect(scanner.strippedEvents).toBe(0);
      });
    }
  });

  it('without usage: counts stay null, text is collected (completions), nothing is stripped', () => {
    const { all } = stream([`data: ${completionChunk('foo')}`, `data: ${completionChunk(' bar')}`, 'data: [DONE]'], '\r\n');
    for (const strip of [true, false]) {
      everySplit(Buffer.from(all), strip, ({ out, scanner }) => {
        expect(out.toString()).toBe(all);
        expect(scanner.promptTokens).toBeNull();
        expect(scanner.completionTokens).toBeNull();
        expect(scanner.text).toBe('foo bar');
      });
    }
  });

  it('without usage: the text of tool-call arguments and of reasoning deltas is collected too', () => {
    const chunk = (delta: unknown): string => `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: null }] })}`;
    const { all } = stream([
      chunk({ role: 'assistant', reasoning_content: 'Weather? ' }),
      chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '"SF"}' } }] }),
      'data: [DONE]',
    ], '\n');
    everySplit(Buffer.from(all), true, ({ out, scanner }) => {
      expect(out.toString()).toBe(all);
      expect(scanner.completionTokens).toBeNull();
      expect(scanner.text).toBe('Weather? get_weather{"city":"SF"}');
    });
  });

  it('forwards malformed data lines and other fields untouched', () => {
    const events = [
      'data: {"choices":[{"text":"ok"}]',  // truncated JSON
      'data: not json at all',
      'event: ping\nid: 7\nretry: 100',
      'datafoo: {"choices":[],"usage":{"completion_tokens":99}}', // not a data field
      'data: 42',
      `data: ${completionChunk('fine')}`,
      'data: [DONE]',
    ];
    const { all } = stream(events, '\n');
    for (const strip of [true, false]) {
      everySplit(Buffer.from(all), strip, ({ out, scanner }) => {
        expect(out.toString()).toBe(all);
        expect(scanner.completionTokens).toBeNull();
        expect(scanner.text).toBe('fine');
      });
    }
  });

  it('joins multi-line data fields before parsing', () => {
    const all = 'data: {"choices":[],\ndata: "usage":{"prompt_tokens":2,"completion_tokens":5}}\n\ndata: [DONE]\n\n';
    everySplit(Buffer.from(all), true, ({ out, scanner }) => {
      expect(out.toString()).toBe('data: [DONE]\n\n');
      expect(scanner.promptTokens).toBe(2);
      expect(scanner.completionTokens).toBe(5);
    });
  });

  it('end() flushes a last event that lacks its blank line, and strips it when it is the usage chunk', () => {
    const tail = `data: ${chatChunk('q')}\n`;
    const keep = feed(Buffer.from(tail), [5], true);
    expect(keep.out.toString()).toBe(tail);
    expect(keep.scanner.text).toBe('q');

    const usageTail = `data: ${chatChunk('q')}\n\ndata: ${usageChunk}`;
    const stripped = feed(Buffer.from(usageTail), [9], true);
    expect(stripped.out.toString()).toBe(`data: ${chatChunk('q')}\n\n`);
    expect(stripped.scanner.completionTokens).toBe(3);
  });

  it('an empty chunk is harmless', () => {
    const scanner = new SseUsageScanner({ stripUsageChunk: true });
    expect(scanner.push(Buffer.alloc(0)).length).toBe(0);
    expect(scanner.end().length).toBe(0);
  });

  describe('bounded holding (maxEventBytes 80)', () => {
    const max = 80;
    const bigUsage = ': ' + 'p'.repeat(40) + '\ndata: {"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1}}';
    const smallUsage = 'data: {"choices":[],"usage":{"prompt_tokens":2,"completion_tokens":5}}';
    const events = [
      'data: {"choices":[{"text":"a"}]}',
      `data: ${'x'.repeat(200)}`, // one line longer than the bound
      `data: {"choices":[{"text":\ndata: "b"}]}\n: ${'c'.repeat(40)}\n: ${'d'.repeat(40)}`, // short lines, long event
      bigUsage, // usage-only but longer than the bound: forwarded without its usage member, still read
      smallUsage, // stripped
      'data: [DONE]',
    ];
    for (const eol of ['\n', '\r\n']) {
      const all = events.map((e) => `${e.replaceAll('\n', eol)}${eol}${eol}`).join('');
      const withoutUsage = all.replace(`${smallUsage}${eol}${eol}`, '');

      const withoutBoth = withoutUsage.replace(`${bigUsage.replaceAll('\n', eol)}${eol}${eol}`, '');
      const bigCut = withoutUsage.replace(bigUsage.replaceAll('\n', eol), bigUsage.replaceAll('\n', eol).replace(/,"usage":.*\}$/, '}'));

      it(`strip mode forwards oversized events whole and still strips the normal usage chunk (${JSON.stringify(eol)})`, () => {
        everySplit(Buffer.from(all), true, ({ out, scanner }, byByte) => {
          // An oversized usage event that arrives within one chunk is never held, so it can still be
          // stripped; once held past the bound it is forwarded, its usage member cut as it passes.
          if (byByte) expect(scanner.strippedEvents).toBe(1);
          expect(out.toString()).toBe(scanner.strippedEvents === 1 ? bigCut : withoutBoth);
          expect(scanner.text).toBe('ab');
          expect(scanner.promptTokens).toBe(2);
          expect(scanner.completionTokens).toBe(5);
          if (byByte) expect(scanner.skippedLines).toBe(1);
        }, max);
      });

      it(`keep mode skips parsing an oversized line only (${JSON.stringify(eol)})`, () => {
        everySplit(Buffer.from(all), false, ({ out, scanner }, byByte) => {
          expect(out.toString()).toBe(all);
          expect(scanner.text).toBe('ab');
          expect(scanner.completionTokens).toBe(5);
          if (byByte) expect(scanner.skippedLines).toBe(1);
        }, max);
      });
    }

    it('strip mode stops holding an event once it outgrows the bound', () => {
      const scanner = new SseUsageScanner({ stripUsageChunk: true, maxEventBytes: max });
      expect(scanner.push(Buffer.from('data: {"choices":[{"text":"')).length).toBe(0);
      const more = Buffer.from('y'.repeat(100));
      expect(scanner.push(more).toString()).toBe(`data: {"choices":[{"text":"${'y'.repeat(100)}`);
      expect(scanner.push(Buffer.from('z')).toString()).toBe('z');
      expect(scanner.push(Buffer.from('"}]}\n\ndata: [DONE]\n')).toString()).toBe('"}]}\n\n');
      expect(scanner.end().toString()).toBe('data: [DONE]\n');
      expect(scanner.skippedLines).toBe(1);
      expect(scanner.text).toBe('');
    });

    it('rejects a bad bound', () => {
      expect(() => new SseUsageScanner({ stripUsageChunk: true, maxEventBytes: 0 })).toThrow(/maxEventBytes/);
    });
  });

  it('random multi-way splits (seeded) give the same output as one chunk', () => {
    let seed = 12345;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const streams = ['\n', '\r\n', '\r'].map((eol) => stream(chatEvents, eol));
    for (let i = 0; i < 600; i++) {
      const { all, withoutUsage } = streams[i % 3];
      const bytes = Buffer.from(all);
      const cuts = Array.from({ length: 1 + rand(12) }, () => rand(bytes.length + 1)).sort((a, b) => a - b);
      const strip = i % 2 === 0;
      // 156: every line (at most 154 bytes) is parsed, but a CRLF content event (158) passes through.
      const { out, scanner } = feed(bytes, cuts, strip, i % 4 < 2 ? 156 : undefined);
      expect(out.toString()).toBe(strip ? withoutUsage : all);
      expect(scanner.text).toBe(chatText);
      expect(scanner.completionTokens).toBe(3);
    }
  });
});

describe('SseUsageScanner.finished: the stream said it is whole', () => {
  it('is false until the [DONE] event ends, true from then on, whatever the split, the line ends, an error event before it', () => {
    for (const eol of ['\n', '\r\n']) {
      for (const events of [chatEvents, [`data: ${completionChunk('a')}`, 'data: {"error":{"message":"engine failed"}}', 'data: [DONE]']]) {
        const bytes = Buffer.from(stream(events, eol).all);
        // The blank line after [DONE] ends it; a lone \r at the end is read as a line's end (its \n may not come).
        const finishedFrom = eol === '\r\n' ? bytes.length - 1 : bytes.length;
        for (let cut = 1; cut < bytes.length; cut++) {
          const scanner = new SseUsageScanner({ stripUsageChunk: true });
          scanner.push(bytes.subarray(0, cut));
          // [DONE] is whole only once its blank line came.
          expect(scanner.finished).toBe(cut >= finishedFrom);
          scanner.push(bytes.subarray(cut));
          expect(scanner.finished).toBe(true);
        }
      }
    }
  });

  it('a stream without [DONE], or with [DONE] inside another event\'s data, is not finished', () => {
    const scanner = new SseUsageScanner({ stripUsageChunk: false });
    scanner.push(Buffer.from(`data: ${completionChunk('[DONE]')}\n\ndata: [DONE] \n\n: [DONE]\n\n`));
    expect(scanner.finished).toBe(false);
    scanner.end();
    expect(scanner.finished).toBe(false);
  });
});

describe('SseUsageScanner: counts a pod reports past 2^53', () => {
  it('are taken as not reported: the text stays to be counted (it was dropped once such a count came)', () => {
    const scanner = new SseUsageScanner({ stripUsageChunk: false });
    const big = '{"id":"c1","object":"chat.completion.chunk","model":"m","choices":[],"usage":{"prompt_tokens":1e300,"completion_tokens":1e300,"total_tokens":1e300}}';
    scanner.push(Buffer.from(`data: ${chatChunk('four words of text')}\n\ndata: ${big}\n\ndata: [DONE]\n\n`));
    scanner.end();
    const u = scanner.usage();
    expect(u.completionTokens).toBeNull();
    expect(u.promptTokens).toBeNull();
    expect(u.text).toBe('four words of text');
  });
});

describe('SseUsageScanner strip mode: the usage-only chunk in the shapes servers send', () => {
  it('choices [], null or absent: the whole event is removed (no empty chunk reaches the client); with a choice it stays, cut', () => {
    const text = `data: ${chatChunk('hi')}\n\n`;
    for (const shape of [
      { id: 'c1', object: 'chat.completion.chunk', choices: [], usage: USAGE },
      { id: 'c1', object: 'chat.completion.chunk', choices: null, usage: USAGE },
      { id: 'c1', object: 'chat.completion.chunk', usage: USAGE },
    ]) {
      const scanner = new SseUsageScanner({ stripUsageChunk: true });
      const out = Buffer.concat([scanner.push(Buffer.from(`${text}data: ${JSON.stringify(shape)}\n\ndata: [DONE]\n\n`)), scanner.end()]).toString();
      expect(out).toBe(`${text}data: [DONE]\n\n`);
      expect(scanner.usage().completionTokens).toBe(3);
    }
    const scanner = new SseUsageScanner({ stripUsageChunk: true });
    const withChoice = { id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'x' } }], usage: USAGE };
    const out = Buffer.concat([scanner.push(Buffer.from(`data: ${JSON.stringify(withChoice)}\n\n`)), scanner.end()]).toString();
    expect(out).toBe(`data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'x' } }] })}\n\n`);
  });
});
