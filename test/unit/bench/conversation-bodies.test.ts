import { describe, expect, it } from 'vitest';
import { conversationBodies } from '../../../bench/scenarios.js';

describe('conversationBodies (scenario 9c)', () => {
  const bodies = conversationBodies('sf-model');

  it('are 16 chat bodies of 200 to 230 messages, 30 to 40 KB, the last message a question', () => {
    expect(bodies).toHaveLength(16);
    bodies.forEach((b, i) => {
      const parsed = JSON.parse(b) as { model: string; messages: { role: string; content: string }[] };
      expect(parsed.model).toBe('sf-model');
      expect(parsed.messages).toHaveLength(200 + 2 * i);
      expect(parsed.messages.at(-1)!.role).toBe('user');
      expect(b.length).toBeGreaterThan(30_000);
      expect(b.length).toBeLessThan(40_000);
    });
  });

  it('each body resends the messages of every one before it, byte for byte, as a client does', () => {
    for (let i = 0; i < bodies.length; i++) {
      const messagesEnd = bodies[i]!.lastIndexOf(']');
      for (let j = i + 1; j < bodies.length; j++) {
        expect(bodies[j]!.startsWith(bodies[i]!.slice(0, messagesEnd))).toBe(true);
        expect(bodies[j]![messagesEnd]).toBe(',');
      }
    }
  });
});
