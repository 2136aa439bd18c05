import { describe, expect, it } from 'vitest';
import { drainAgainLine } from '../../../src/primary/drain-again.js';

describe('drainAgainLine: a stop signal while a drain is under way', () => {
  it('says the drain goes on, how long requests in flight have left, and that SIGKILL stops at once', () => {
    const line = drainAgainLine('SIGTERM', 1234.4, 5000, 30_000);
    expect(line.message).toBe('SIGTERM received while a drain is already under way (begun 1234 ms ago): the drain goes on; '
      + 'requests still in flight get at most 33766 ms more (ROUTER_DRAIN_DELAY 5000 ms + ROUTER_DRAIN_TIMEOUT 30000 ms from its start), then are cut; '
      + 'SIGKILL stops the router at once (requests in flight and access-log records not yet written are lost)');
    expect(line.fields).toEqual({ signal: 'SIGTERM', elapsedMs: 1234, leftMs: 33766, delayMs: 5000, timeoutMs: 30_000 });
  });

  it('nothing left once the deadline passed (the workers still finishing their records)', () => {
    expect(drainAgainLine('SIGINT', 40_000, 0, 2000).fields).toMatchObject({ signal: 'SIGINT', leftMs: 0 });
  });
});
