import { describe, expect, it } from 'vitest';
import { Http1Error } from '../../../src/upstream/http1/errors.js';
import { connectFailureCause, PodFault, podFault, upstreamFailure } from '../../../src/upstream/upstream-errors.js';
import { Http1Pool } from '../../../src/upstream/http1/pool.js';
import { Collector, post } from './http1/helpers.js';

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

describe('connectFailureCause: why a request was not sent to a pod, in words without an address', () => {
  it('names each failure by its code; an unknown code as itself', () => {
    expect(connectFailureCause(socketError('ECONNREFUSED'))).toBe('connection refused');
    expect(connectFailureCause(new Http1Error('HTTP1_CONNECT_TIMEOUT', 'connect to 10.0.0.1:8000 timed out'))).toBe('connect timed out');
    expect(connectFailureCause(socketError('ENOTFOUND'))).toBe('host name not found');
    expect(connectFailureCause(socketError('EAI_AGAIN'))).toBe('host name not resolved (DNS did not answer)');
    expect(connectFailureCause(new Http1Error('HTTP1_QUEUE_FULL', 'q'))).toBe('its queue in the router is full');
    expect(connectFailureCause(socketError('EWHATEVER'))).toBe('EWHATEVER');
    expect(connectFailureCause(new Error('no code'))).toBe('connect failed');
  });

  it('a pod whose host name does not resolve: the pool\'s failure reads as such, not as a refused connection', async () => {
    const pool = new Http1Pool('no-such-pod.invalid', 8000);
    const c = new Collector();
    pool.dispatch(post(), c);
    const { error } = await c.done;
    pool.close();
    // NXDOMAIN where a resolver answers; a resolver that cannot be reached says so instead.
    expect(['host name not found', 'host name not resolved (DNS did not answer)']).toContain(connectFailureCause(error));
  });
});
