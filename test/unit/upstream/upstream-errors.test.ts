import { describe, expect, it } from 'vitest';
import { Http1Error } from '../../../src/upstream/http1/errors.js';
import { PodFault, podFault } from '../../../src/upstream/upstream-errors.js';

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
