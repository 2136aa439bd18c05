import { afterEach, describe, expect, it } from 'vitest';
import { Exchange } from '../../../src/http/exchange.js';
import { RequestContext } from '../../../src/http/request-context.js';
import { drainState } from '../../../src/http/drain-state.js';

/**
 * A stream's end whose own write is the first the connection does not take whole: uWS keeps the
 * rest in its buffer, and after the end nothing says when that emptied. The end waits, as for a
 * stream pushed back earlier, until a write of a kept-back byte finds the buffer empty.
 */

/** A uWS response whose write() reports backpressure while `full`; records what it was given. */
class ScriptedResponse {
  readonly calls: string[] = [];
  full = false;
  writable: ((offset: number) => boolean) | null = null;
  cork(f: () => void): void {
    f();
  }
  writeStatus(): void {}
  writeHeader(): void {}
  write(chunk: Buffer): boolean {
    this.calls.push(`write ${chunk.toString('latin1')}`);
    return !this.full;
  }
  end(body?: Buffer): void {
    this.calls.push(`end ${body?.toString('latin1') ?? ''}`);
  }
  onWritable(f: (offset: number) => boolean): void {
    this.writable = f;
  }
  /** The body as given to uWS, in order: every byte once. */
  body(): string {
    return this.calls.map((c) => c.slice(c.indexOf(' ') + 1)).join('');
  }
}

const turnEnd = (): Promise<void> => new Promise((r) => setImmediate(r));

function stream(id: string): { x: Exchange; res: ScriptedResponse; recorded: Exchange[] } {
  const res = new ScriptedResponse();
  const ctx = new RequestContext('POST', '/v1/completions', 'HTTP/1.1', id, Date.now(), performance.now());
  const x = new Exchange(res as never, ctx, '/v1/completions', [], null, '');
  x.startAnswer(200, ['content-type', 'text/event-stream']);
  return { x, res, recorded: [] };
}

const FIRST = 'data: {"choices":[{"text":"a"}]}\n\n';
const LAST = 'data: {"choices":[{"text":"b"}]}\n\ndata: [DONE]\n\n';

describe('Exchange: a stream whose end is the first write the connection does not take whole', () => {
  afterEach(() => {
    drainState.draining = false;
    drainState.tailMayBeBuffered = false;
  });

  for (const draining of [false, true]) {
    it(`ends only once a write finds uWS's buffer empty, every byte given once (${draining ? 'draining' : 'not draining'})`, async () => {
      drainState.draining = draining;
      const { x, res, recorded } = stream(`rid-end-first-${draining}`);
      x.writeChunk(Buffer.from(FIRST));
      await turnEnd();
      res.full = true;
      x.endStream(Buffer.from(LAST));
      expect(x.holdRecord((e) => recorded.push(e))).toBe(true);
      await turnEnd();
      // The socket reports writable while uWS still holds bytes: no end yet, nor a record.
      res.writable!(0);
      expect(res.calls.some((c) => c.startsWith('end'))).toBe(false);
      expect(recorded).toEqual([]);
      res.full = false;
      res.writable!(0);
      expect(res.calls.at(-1)!.startsWith('end')).toBe(true);
      expect(res.body()).toBe(FIRST + LAST);
      expect(recorded).toEqual([x]);
      expect(x.ctx.statusCode).toBe(200);
      expect(x.ctx.errorType).toBeNull();
      // The drain may close the connections: uWS's buffer was seen empty before the end.
      expect(drainState.tailMayBeBuffered).toBe(false);
    });
  }

  it('a client that leaves while the end waits is recorded once, 499 client_closed; a late writable event writes nothing', async () => {
    const { x, res, recorded } = stream('rid-end-gone');
    x.writeChunk(Buffer.from(FIRST));
    await turnEnd();
    res.full = true;
    x.endStream(Buffer.from(LAST));
    x.holdRecord((e) => recorded.push(e));
    await turnEnd();
    res.writable!(0);
    const calls = res.calls.length;
    x.clientGone();
    expect(recorded).toEqual([x]);
    expect(x.ctx.statusCode).toBe(499);
    expect(x.ctx.errorType).toBe('client_closed');
    expect(res.writable!(0)).toBe(true);
    expect(res.calls).toHaveLength(calls);
    expect(x.holdRecord((e) => recorded.push(e))).toBe(false);
    expect(recorded).toHaveLength(1);
  });

  it('a stream whose end goes out whole ends at the end of the turn, every byte once', async () => {
    const { x, res, recorded } = stream('rid-end-fast');
    x.writeChunk(Buffer.from(FIRST));
    x.endStream(Buffer.from(LAST));
    x.holdRecord((e) => recorded.push(e));
    await turnEnd();
    expect(res.calls.at(-1)!.startsWith('end')).toBe(true);
    expect(res.body()).toBe(FIRST + LAST);
    expect(recorded).toEqual([x]);
  });
});
