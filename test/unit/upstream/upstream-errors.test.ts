import { describe, expect, it } from 'vitest';
import { Http1Error } from '../../../src/upstream/http1/errors.js';
import { PodFault, podFault, upstreamFailure } from '../../../src/upstream/upstream-errors.js';

const socketError = (code: string) => Object.assign(new Error(code), { code });

describe('podFault: what a failed exchange says of the pod (passive health)', () => {
  it('a connection the pod closed or reset after it had the request, or a cut or malformed answer, is lost', () => {
    for (const err of [
      new Http1Error('HTTP1_PREMATURE_CLOSE', 'upstream closed the connection'),
      socketError('ECONNRESET'),
      socketError('EPIPE'),
      new Http1Error('HTTP1_MALFORMED_RESPONSE', 'bad'),
      new Error('no code'),
    ]) expect(podFault(err)).toBe(PodFault.Lost);
  });

  it('timeouts are timeouts; connect failures (counted apart), the router\'s own abort and nothing are not the pod\'s', () => {
    for (const code of ['HTTP1_TOTAL_TIMEOUT', 'HTTP1_HEADERS_TIMEOUT', 'HTTP1_BODY_TIMEOUT'] as const) expect(podFault(new Http1Error(code, 't'))).toBe(PodFault.Timeout);
    for (const err of [socketError('ECONNREFUSED'), new Http1Error('HTTP1_CONNECT_TIMEOUT', 'c'), new Http1Error('HTTP1_ABORTED', 'pool closed')]) {
      expect(podFault(err)).toBe(PodFault.None);
    }
  });
});

describe('upstreamFailure: the router\'s own cut is not the pod\'s failure', () => {
  it('a request its pool\'s close cut (HTTP1_ABORTED) is 503 router_stopping, its message leading with why', () => {
    const cut = new Http1Error('HTTP1_ABORTED', 'the pool for 127.0.0.1:9 closed: the router is stopping: ROUTER_DRAIN_TIMEOUT (1000 ms) passed',
      'the router is stopping: ROUTER_DRAIN_TIMEOUT (1000 ms) passed');
    const e = upstreamFailure(cut, 30_000, 'pod-a');
    expect([e.type, e.code, e.status]).toEqual(['upstream_error', 'router_stopping', 503]);
    expect(e.message).toBe('the router is stopping: ROUTER_DRAIN_TIMEOUT (1000 ms) passed; the router cut its exchange with pod pod-a');
    expect(upstreamFailure(new Http1Error('HTTP1_ABORTED', 'request aborted'), 30_000, 'pod-a').message)
      .toBe('the router closed its connections; the router cut its exchange with pod pod-a');
  });

  it('a pod\'s reset and a timeout stay the pod\'s', () => {
    expect(upstreamFailure(socketError('ECONNRESET'), 30_000, 'pod-a')).toMatchObject({ type: 'upstream_error', code: 'upstream_failed', status: 502 });
    expect(upstreamFailure(new Http1Error('HTTP1_BODY_TIMEOUT', 't'), 30_000, 'pod-a')).toMatchObject({ type: 'timeout', code: 'upstream_timeout', message: 'inference timed out after 30s' });
  });
});
