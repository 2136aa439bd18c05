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
  end(body: Buffer, close: boolean): void {
    this.calls.push(`end ${body.toString()}${close ? ' close' : ''}`);
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
