import { describe, expect, it } from 'vitest';
import { Exchange } from '../../../src/http/exchange.js';
import { RequestContext } from '../../../src/http/request-context.js';
import { RouterError } from '../../../src/errors.js';

const text = (s: string | Uint8Array): string => (typeof s === 'string' ? s : Buffer.from(s).toString('latin1'));

/** What a uWS HttpResponse was asked to do, in order. */
class RecordingResponse {
  readonly calls: string[] = [];
  cork(f: () => void): void {
    this.calls.push('cork');
    f();
  }
  writeStatus(s: string | Uint8Array): void {
    this.calls.push(`status ${text(s)}`);
  }
  /** One entry per header line: a value may carry further lines (`value\r\nname: value`). */
  writeHeader(k: string, v: string | Uint8Array): void {
    this.calls.push(...`${k}: ${text(v)}`.split('\r\n'));
  }
  end(body?: Buffer, close?: boolean): void {
    this.calls.push(`end ${body?.toString() ?? ''}${close ? ' close' : ''}`);
  }
}

function exchange(id: string): { x: Exchange; res: RecordingResponse } {
  const res = new RecordingResponse();
  const ctx = new RequestContext('POST', '/v1/completions', 'HTTP/1.1', id, Date.now(), performance.now());
  return { x: new Exchange(res as never, ctx, '/v1/completions', [], null, ''), res };
}

const turnEnd = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('Exchange.endBuffered: whole answers go out at the end of the turn', () => {
  it('writes nothing at once, then each answer of the turn whole, in order, with one cork each', async () => {
    const a = exchange('rid-a');
    const b = exchange('rid-b');
    a.x.endBuffered(200, ['Content-Type', 'application/json'], Buffer.from('{"a":1}'));
    b.x.endBuffered(404, [], Buffer.from('nope'));
    // The answer counts as sent at once: the pipeline and the log go on as before.
    expect(a.x.headersSent && a.x.ctx.finished && a.x.ctx.statusCode === 200).toBe(true);
    expect(b.x.ctx.statusCode).toBe(404);
    expect(a.res.calls).toEqual([]);
    expect(b.res.calls).toEqual([]);
    await turnEnd();
    expect(a.res.calls).toEqual(['cork', 'status 200 OK', 'content-type: application/json', 'x-request-id: rid-a', 'end {"a":1}']);
    expect(b.res.calls).toEqual(['cork', 'status 404 Not Found', 'x-request-id: rid-b', 'end nope']);
    await turnEnd();
    expect(a.res.calls).toHaveLength(5); // written once
  });

  it('skips the answer of a client that left before the turn ended, and writes the others', async () => {
    const gone = exchange('rid-gone');
    const kept = exchange('rid-kept');
    gone.x.endBuffered(200, [], Buffer.from('x'));
    kept.x.endBuffered(200, [], Buffer.from('y'));
    gone.x.clientGone();
    await turnEnd();
    expect(gone.res.calls).toEqual([]);
    expect(kept.res.calls.at(-1)).toBe('end y');
  });

  it('flushAnswers() writes the queued answers at once (a worker about to exit)', () => {
    const a = exchange('rid-now');
    a.x.endBuffered(200, [], Buffer.from('now'));
    Exchange.flushAnswers();
    expect(a.res.calls.at(-1)).toBe('end now');
  });

  it('an error after the answer was queued is recorded but writes nothing more', async () => {
    const a = exchange('rid-late');
    a.x.endBuffered(200, [], Buffer.from('ok'));
    a.x.abortAnswer();
    await turnEnd();
    expect(a.res.calls).toEqual(['cork', 'status 200 OK', 'x-request-id: rid-late', 'end ok']);
  });

  it('sendErrorAtTurnEnd records the error at once and writes its answer after the turn; sendError writes at once', async () => {
    const late = exchange('rid-429');
    late.x.acceptJson = true;
    late.x.sendErrorAtTurnEnd(new RouterError('rate_limit', 'input token limit reached', 429, null, 'input_tokens_exceeded'));
    expect(late.x.ctx.statusCode).toBe(429);
    expect(late.x.ctx.errorType).toBe('rate_limit');
    expect(late.x.headersSent).toBe(true);
    expect(late.res.calls).toEqual([]);
    const now = exchange('rid-413');
    now.x.sendError(new RouterError('invalid_request', 'too large', 413, null, 'request_too_large'));
    expect(now.res.calls.slice(0, 2)).toEqual(['cork', 'status 413 Payload Too Large']);
    await turnEnd();
    expect(late.res.calls.slice(0, 4)).toEqual(['cork', 'status 429 Too Many Requests', 'content-type: application/json', 'x-request-id: rid-429']);
    expect(JSON.parse(late.res.calls.at(-1)!.slice('end '.length)).error.message).toBe('input token limit reached');
    // The error's own headers follow, each on its line.
    const unavailable = exchange('rid-503');
    unavailable.x.sendError(new RouterError('upstream_error', 'rate limiter unavailable', 503, { 'retry-after': '1', 'x-extra': 'two' }, 'limiter_unavailable'));
    expect(unavailable.res.calls.slice(0, 6)).toEqual(['cork', 'status 503 Service Unavailable', 'content-type: text/plain; charset=utf-8',
      'x-request-id: rid-503', 'retry-after: 1', 'x-extra: two']);
  });

  it('a queued error is not written to a client that left', async () => {
    const gone = exchange('rid-gone-429');
    gone.x.sendErrorAtTurnEnd(new RouterError('rate_limit', 'limit', 429, null, 'input_tokens_exceeded'));
    gone.x.clientGone();
    await turnEnd();
    expect(gone.res.calls).toEqual([]);
  });

  it('an answer whose write throws does not keep the others of its turn from going out; the error surfaces after them', () => {
    const bad = exchange('rid-bad');
    const good = exchange('rid-good');
    bad.res.cork = () => { throw new Error('discarded response'); };
    bad.x.endBuffered(200, [], Buffer.from('x'));
    good.x.endBuffered(200, [], Buffer.from('y'));
    expect(() => Exchange.flushAnswers()).toThrow('discarded response');
    expect(good.res.calls.at(-1)).toBe('end y');
    Exchange.flushAnswers(); // the queue is empty again
    expect(good.res.calls.filter((c) => c.startsWith('end'))).toHaveLength(1);
  });
});

/** A response that takes `takes` bytes of a body at first, as a connection whose client reads slowly. */
class SlowResponse extends RecordingResponse {
  /** Bytes of the body the connection takes per tryEnd (the rest waits for onWritable). */
  takes = 100;
  /** write() (a stream's chunk) reports backpressure. */
  writeFails = false;
  offset = 0;
  writable: ((offset: number) => boolean) | null = null;
  tryEnd(chunk: Buffer, total: number): [boolean, boolean] {
    const n = Math.min(this.takes, chunk.length);
    this.offset += n;
    this.calls.push(`tryEnd ${chunk.length}/${total} took ${n}`);
    const done = this.offset === total;
    return [n === chunk.length, done];
  }
  getWriteOffset(): number {
    return this.offset;
  }
  onWritable(f: (offset: number) => boolean): void {
    this.calls.push('onWritable');
    this.writable = f;
  }
  write(chunk: Buffer): boolean {
    this.calls.push(`write ${chunk.length}`);
    return !this.writeFails;
  }
  close(): void {
    this.calls.push('close');
  }
}

function slowExchange(id: string): { x: Exchange; res: SlowResponse; recorded: Exchange[] } {
  const res = new SlowResponse();
  const ctx = new RequestContext('POST', '/v1/completions', 'HTTP/1.1', id, Date.now(), performance.now());
  return { x: new Exchange(res as never, ctx, '/v1/completions', [], null, ''), res, recorded: [] };
}

describe('Exchange: an answer the client takes slowly is recorded once it is out, or as cut', () => {
  const big = Buffer.alloc(64 * 1024, 'a');

  it('a small whole answer keeps the one end() and is recorded at once', async () => {
    const { x, res, recorded } = slowExchange('rid-small');
    x.endBuffered(200, [], Buffer.from('{"ok":1}'));
    expect(x.holdRecord((e) => recorded.push(e))).toBe(false);
    await turnEnd();
    expect(res.calls.at(-1)).toBe('end {"ok":1}');
    expect(res.calls.some((c) => c.startsWith('tryEnd') || c === 'onWritable')).toBe(false);
  });

  it('a large whole answer the connection takes at once is recorded at the end of the turn', async () => {
    const { x, res, recorded } = slowExchange('rid-big-fast');
    res.takes = big.length;
    x.endBuffered(200, [], big);
    expect(x.holdRecord((e) => recorded.push(e))).toBe(true);
    expect(recorded).toEqual([]);
    await turnEnd();
    expect(res.calls.at(-1)).toBe(`tryEnd ${big.length}/${big.length} took ${big.length}`);
    expect(recorded).toEqual([x]);
    expect(x.ctx.statusCode).toBe(200);
    expect(x.ctx.errorType).toBeNull();
  });

  it('the rest of a large whole answer goes out from onWritable, from the same body, and the record waits for its last byte', async () => {
    const { x, res, recorded } = slowExchange('rid-big-slow');
    x.endBuffered(200, [], big);
    x.holdRecord((e) => recorded.push(e));
    await turnEnd();
    expect(res.calls.slice(-2)).toEqual([`tryEnd ${big.length}/${big.length} took 100`, 'onWritable']);
    expect(recorded).toEqual([]);
    expect(res.writable!(res.offset)).toBe(false); // not all of it: uWS calls again
    expect(res.calls.at(-1)).toBe(`tryEnd ${big.length - 100}/${big.length} took 100`);
    expect(recorded).toEqual([]);
    res.takes = big.length;
    expect(res.writable!(res.offset)).toBe(true);
    expect(res.calls.at(-1)).toBe(`tryEnd ${big.length - 200}/${big.length} took ${big.length - 200}`);
    expect(recorded).toEqual([x]);
    expect(x.ctx.statusCode).toBe(200);
    expect(x.ctx.errorType).toBeNull();
    expect(x.ctx.tEnd).toBeGreaterThan(0);
  });

  it('a client that leaves while a large whole answer goes out is recorded 499 client_closed with what went out', async () => {
    const { x, res, recorded } = slowExchange('rid-big-gone');
    x.endBuffered(200, [], big);
    x.holdRecord((e) => recorded.push(e));
    await turnEnd();
    res.writable!(res.offset);
    x.clientGone();
    expect(recorded).toEqual([x]);
    expect(x.ctx.statusCode).toBe(499);
    expect(x.ctx.errorType).toBe('client_closed');
    expect(x.ctx.errorMessage).toBe(`the client went away before the answer ended (200 of ${big.length} bytes of the body handed to the connection)`);
    expect(res.writable!(res.offset)).toBe(true); // a late writable event writes nothing
    expect(res.calls.filter((c) => c.startsWith('tryEnd'))).toHaveLength(2);
  });

  it('the record is written once, also when the pipeline ends after the client left', async () => {
    const { x, recorded } = slowExchange('rid-big-gone-first');
    x.endBuffered(200, [], big);
    await turnEnd();
    x.clientGone();
    expect(x.holdRecord((e) => recorded.push(e))).toBe(false); // the pipeline records it now
    expect(x.ctx.statusCode).toBe(499);
  });

  it('a stream whose last bytes the connection did not take ends once it takes more; the record waits for that', async () => {
    const { x, res, recorded } = slowExchange('rid-stream');
    x.startAnswer(200, ['content-type', 'text/event-stream']);
    x.writeChunk(Buffer.from('data: one\n\n'));
    await turnEnd();
    res.writeFails = true;
    x.endStream(Buffer.from('data: [DONE]\n\n'));
    expect(x.holdRecord((e) => recorded.push(e))).toBe(true);
    await turnEnd();
    // All but the last bytes, kept back to learn when uWS's buffer is empty (the end's probes).
    expect(res.calls.slice(-3)).toEqual(['cork', 'write 1', 'onWritable']);
    expect(recorded).toEqual([]);
    res.writable!(0); // a probe that finds uWS's buffer still holding bytes: the end waits
    expect(res.calls.slice(-3)).toEqual(['cork', 'write 1', 'onWritable']);
    expect(recorded).toEqual([]);
    res.writeFails = false;
    res.writable!(0);
    expect(res.calls.slice(-3)).toEqual(['cork', 'write 1', 'end a: [DONE]\n\n']);
    expect(recorded).toEqual([x]);
    expect(x.ctx.statusCode).toBe(200);
  });

  it('a stream whose last bytes went out ends with them and is recorded at the end of the turn', async () => {
    const { x, res, recorded } = slowExchange('rid-stream-fast');
    x.startAnswer(200, ['content-type', 'text/event-stream']);
    x.writeChunk(Buffer.from('data: one\n\n'));
    x.endStream(Buffer.from('data: [DONE]\n\n'));
    x.holdRecord((e) => recorded.push(e));
    expect(recorded).toEqual([]);
    await turnEnd();
    expect(res.calls.slice(-2)).toEqual(['write 9', 'end \n\ndata: [DONE]\n\n']);
    expect(recorded).toEqual([x]);
  });

  it('a drain that times out cuts the answers still going out: recorded upstream_error with the status sent, the connection closed', async () => {
    const { x, res, recorded } = slowExchange('rid-drain');
    x.endBuffered(200, [], big);
    x.holdRecord((e) => recorded.push(e));
    await turnEnd();
    expect(Exchange.cutAnswersGoingOut('the router is stopping: ROUTER_DRAIN_TIMEOUT (1000 ms) passed')).toBe(1);
    expect(res.calls.at(-1)).toBe('close');
    expect(recorded).toEqual([x]);
    expect(x.ctx.statusCode).toBe(200);
    expect(x.ctx.errorType).toBe('upstream_error');
    expect(x.ctx.errorMessage).toBe(`the router is stopping: ROUTER_DRAIN_TIMEOUT (1000 ms) passed (100 of ${big.length} bytes of the body handed to the connection)`);
    x.clientGone(); // the close's onAborted
    expect(x.ctx.statusCode).toBe(200);
    expect(recorded).toHaveLength(1);
    expect(Exchange.cutAnswersGoingOut('again')).toBe(0);
  });
});

describe('Exchange.abortAnswer: a stream cut partway, with the event that says why', () => {
  /** SlowResponse that keeps what each write() carried. */
  class WritesResponse extends SlowResponse {
    readonly bodies: string[] = [];
    override write(chunk: Buffer): boolean {
      this.bodies.push(chunk.toString());
      return super.write(chunk);
    }
  }
  const CLOSING = Buffer.from('data: {"error":{"message":"cut"}}\n\n');

  function streamExchange(id: string): { x: Exchange; res: WritesResponse } {
    const res = new WritesResponse();
    const ctx = new RequestContext('POST', '/v1/chat/completions', 'HTTP/1.1', id, Date.now(), performance.now());
    return { x: new Exchange(res as never, ctx, '/v1/chat/completions', [], null, ''), res };
  }

  it('writes the bytes still queued for the turn and the event in one write, then closes the connection', async () => {
    const { x, res } = streamExchange('rid-cut');
    x.startAnswer(200, ['content-type', 'text/event-stream']);
    x.writeChunk(Buffer.from('data: one\n\n'));
    await turnEnd();
    x.writeChunk(Buffer.from('data: two\n\n'));
    x.abortAnswer(CLOSING);
    expect(res.bodies).toEqual(['data: one\n\n', `data: two\n\n${CLOSING}`]);
    expect(res.calls.at(-1)).toBe('close');
    expect(x.ctx.finished).toBe(true);
    await turnEnd();
    expect(res.calls.at(-1)).toBe('close'); // nothing after
  });

  it('the head first when the first bytes and the cut come in one turn', async () => {
    const { x, res } = streamExchange('rid-cut-first');
    x.startAnswer(200, ['content-type', 'text/event-stream']);
    x.writeChunk(Buffer.from('data: one\n\n'));
    x.abortAnswer(CLOSING);
    expect(res.calls.slice(0, 2)).toEqual(['cork', 'status 200 OK']);
    expect(res.bodies).toEqual([`data: one\n\n${CLOSING}`]);
    expect(res.calls.at(-1)).toBe('close');
  });

  it('nothing to a client that left, nor before any byte of the answer went out (the caller answers an error then)', async () => {
    const gone = streamExchange('rid-cut-gone');
    gone.x.startAnswer(200, ['content-type', 'text/event-stream']);
    gone.x.writeChunk(Buffer.from('data: one\n\n'));
    await turnEnd();
    gone.x.clientGone();
    gone.x.abortAnswer(CLOSING);
    expect(gone.res.bodies).toEqual(['data: one\n\n']);
    const early = streamExchange('rid-cut-early');
    early.x.startAnswer(200, ['content-type', 'text/event-stream']);
    early.x.abortAnswer(CLOSING);
    await turnEnd();
    expect(early.res.bodies).toEqual([]);
    expect(early.x.headersSent).toBe(false);
  });
});
