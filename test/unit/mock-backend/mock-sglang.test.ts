import { describe, expect, it } from 'vitest';
import { BootstrapRooms, bootstrapRoom, sglangRefusal } from '../../mock-backend/mock-sglang.js';

describe('the mock as an SGLang prefill or decode pod (--pd-role sglang-prefill, sglang-decode)', () => {
  const ROOM = '9223372036854775807';
  const prefill = `{"model":"m","prompt":"x","max_tokens":1,"bootstrap_room":${ROOM}}`;
  const decode = `{"model":"m","prompt":"x","bootstrap_room":${ROOM},"bootstrap_host":"10.0.0.1"}`;

  it('reads the exact digits of the room from the raw body', () => {
    expect(bootstrapRoom(prefill)).toBe(ROOM);
    expect(bootstrapRoom('{"bootstrap_room": 12 }')).toBe('12');
    expect(bootstrapRoom('{"bootstrap_room":"12"}')).toBeNull();
    expect(bootstrapRoom('{"bootstrap_room":1.5}')).toBeNull();
  });

  it('a prefill pod takes one token without stream with a room and no host; a decode pod a room and a host', () => {
    expect(sglangRefusal('sglang-prefill', JSON.parse(prefill), prefill)).toBeNull();
    expect(sglangRefusal('sglang-decode', JSON.parse(decode), decode)).toBeNull();
    expect(sglangRefusal('sglang-prefill', JSON.parse(decode), decode)).toMatch(/max_tokens 1/);
    const noRoom = '{"model":"m","max_tokens":1}';
    expect(sglangRefusal('sglang-prefill', JSON.parse(noRoom), noRoom)).toMatch(/bootstrap_room must be an integer/);
    const big = '{"max_tokens":1,"bootstrap_room":9223372036854775808}';
    expect(sglangRefusal('sglang-prefill', JSON.parse(big), big)).toMatch(/bootstrap_room must be an integer/);
    const noHost = `{"bootstrap_room":${ROOM}}`;
    expect(sglangRefusal('sglang-decode', JSON.parse(noHost), noHost)).toMatch(/no bootstrap_host/);
  });

  it('a room is joined once both its prefill request came and a decode pod joined, in either order', async () => {
    const rooms = new BootstrapRooms();
    const p = rooms.prefillArrived('1');
    expect(await rooms.decodeJoined('1')).toBe(true);
    expect(await p).toBe(true);
    const d = rooms.decodeJoined('2');
    expect(await rooms.prefillArrived('2')).toBe(true);
    expect(await d).toBe(true);
  });
});
