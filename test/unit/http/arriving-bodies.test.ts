import { describe, expect, it } from 'vitest';
import { RouterError } from '../../../src/errors.js';
import { bodyArrived, bodyArriving, cutArrivingBodies } from '../../../src/http/arriving-bodies.js';
import type { Exchange } from '../../../src/http/exchange.js';

/** The part of an exchange the list touches; sendError records what it was given. */
function exchange(id: string): Exchange & { id: string; sent: RouterError | null } {
  const x = {
    id, sent: null as RouterError | null, handedOn: false, forceClose: false, arrivingPrev: null, arrivingNext: null,
    sendError(err: RouterError) { x.sent = err; },
  };
  return x as unknown as Exchange & { id: string; sent: RouterError | null };
}

const STOPPING = new RouterError('upstream_error', 'stopping', 503, null, 'router_stopping');

function cutIds(): string[] {
  const ended: string[] = [];
  cutArrivingBodies(STOPPING, (x) => ended.push((x as unknown as { id: string }).id));
  return ended.sort();
}

describe('requests whose body is still arriving', () => {
  it('leaving the list from its start, middle or end keeps the others; leaving twice or never joined is nothing', () => {
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map(exchange);
    for (const x of [a, b, c, d]) bodyArriving(x);
    bodyArrived(b); // middle
    bodyArrived(d); // start (the newest)
    bodyArrived(d);
    bodyArrived(exchange('never'));
    expect(cutIds()).toEqual(['a', 'c']);
    expect(cutIds()).toEqual([]);
  });

  it('a cut answers each one the error, closes its connection and hands it to finish once', () => {
    const [a, b] = ['a', 'b'].map(exchange);
    bodyArriving(a);
    bodyArriving(b);
    const ended: Exchange[] = [];
    expect(cutArrivingBodies(STOPPING, (x) => ended.push(x))).toBe(2);
    expect(ended).toHaveLength(2);
    for (const x of [a, b]) {
      expect(x.sent).toBe(STOPPING);
      expect(x.handedOn).toBe(true);
      expect(x.forceClose).toBe(true);
      expect(x.arrivingPrev).toBeNull();
      expect(x.arrivingNext).toBeNull();
    }
    // Leaving after the cut (the client's abort arrives later) changes nothing.
    bodyArrived(a);
    expect(cutArrivingBodies(STOPPING, () => {})).toBe(0);
  });
});
