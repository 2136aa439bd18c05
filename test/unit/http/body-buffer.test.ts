import { describe, expect, it } from 'vitest';
import { joinChunkedBody, newBodyBuffer } from '../../../src/http/body-buffer.js';

const pieces = (text: string, size: number): Buffer[] => {
  const out: Buffer[] = [];
  for (let i = 0; i < text.length; i += size) out.push(Buffer.from(text.slice(i, i + size)));
  return out;
};

describe('newBodyBuffer', () => {
  it('gives a body of at least the size shared memory, a smaller one or any with the size 0 (off) an ordinary buffer', () => {
    expect(newBodyBuffer(4096, 4096).buffer).toBeInstanceOf(SharedArrayBuffer);
    expect(newBodyBuffer(4096, 4096).length).toBe(4096);
    expect(newBodyBuffer(4095, 4096).buffer).not.toBeInstanceOf(SharedArrayBuffer);
    expect(newBodyBuffer(1 << 20, 0).buffer).not.toBeInstanceOf(SharedArrayBuffer);
    expect(newBodyBuffer(100, 0).length).toBe(100);
  });
});

describe('joinChunkedBody', () => {
  const text = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x'.repeat(5000) }] });
  const chunks = pieces(text, 777);

  it('joins a body of at least the size into shared memory, its bytes in order', () => {
    const b = joinChunkedBody(chunks, text.length, 4096);
    expect(b.buffer).toBeInstanceOf(SharedArrayBuffer);
    expect(b.length).toBe(text.length);
    expect(b.toString()).toBe(text);
    expect(joinChunkedBody(chunks, text.length, text.length).buffer).toBeInstanceOf(SharedArrayBuffer);
  });

  it('joins a smaller body, or any with the size 0 (off), into an ordinary buffer', () => {
    for (const min of [text.length + 1, 0]) {
      const b = joinChunkedBody(chunks, text.length, min);
      expect(b.buffer).not.toBeInstanceOf(SharedArrayBuffer);
      expect(b.toString()).toBe(text);
    }
    const one = [Buffer.from(text)];
    expect(joinChunkedBody(one, text.length, 0)).toBe(one[0]);
    expect(joinChunkedBody([], 0, 4096).length).toBe(0);
  });
});
