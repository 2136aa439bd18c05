import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import type { LimiterClient } from '../../../src/ratelimit/redis/connection.js';
import { StoreHealth } from '../../../src/ratelimit/redis/health.js';

/** The line that says a Redis store became unavailable names the cause in the router's words. */
describe('StoreHealth: the cause in the line that opens an outage', () => {
  function up(): { client: EventEmitter; health: StoreHealth; lines: string[] } {
    const client = new EventEmitter();
    const lines: string[] = [];
    const health = new StoreHealth(client as unknown as LimiterClient, {
      name: '10.0.0.7:6379', failureMode: 'local', timeoutMs: 50, probeIntervalMs: 60_000, log: (m) => lines.push(m),
    });
    client.emit('ready');
    expect(health.state).toBe('up');
    return { client, health, lines };
  }

  it('a command sent as the connection went down: "connection closed", not the client\'s words for it', () => {
    for (const reason of ["Stream isn't writeable and enableOfflineQueue options is false", 'Connection is closed.']) {
      const { health, lines } = up();
      health.markDown(reason);
      expect(lines).toEqual(['rate limit store 10.0.0.7:6379 is unavailable (connection closed); failure mode "local" applies until it answers again']);
      health.close();
    }
  });

  it('any other cause as it was given, with what to do when it is known', () => {
    const { health, lines } = up();
    health.markDown('connect ECONNREFUSED 10.0.0.7:6379');
    expect(lines).toEqual(['rate limit store 10.0.0.7:6379 is unavailable (connect ECONNREFUSED 10.0.0.7:6379); failure mode "local" applies until it answers again; '
      + 'nothing listens there: check global.redis.address and that Redis runs']);
    health.close();
  });
});
