import { describe, expect, it } from 'vitest';
import { kvFrom, pdRefusal, prefillKvParams } from '../../mock-backend/mock-pd.js';
import { parseMockArgs } from '../../mock-backend/mock-options.js';

describe('the mock as a vLLM prefill or decode pod (--pd-role)', () => {
  it('a prefill pod takes one token without stream only', () => {
    expect(pdRefusal('prefill', { max_tokens: 1 })).toBeNull();
    expect(pdRefusal('prefill', { max_tokens: 1, max_completion_tokens: 1 })).toBeNull();
    expect(pdRefusal('prefill', { max_tokens: 1, stream: false })).toMatch(/no stream/);
    expect(pdRefusal('prefill', { max_tokens: 5 })).toMatch(/max_tokens 1, got 5/);
    expect(pdRefusal('prefill', { max_tokens: 1, max_completion_tokens: 9 })).toMatch(/max_completion_tokens 1/);
  });

  it('answers kv_transfer_params naming itself when asked for a remote decode; a decode pod takes only those', () => {
    expect(prefillKvParams({}, 'p', 'h', 1, 7)).toBeNull();
    const params = prefillKvParams({ kv_transfer_params: { do_remote_decode: true } }, 'p-0', '127.0.0.1', 8000, 7)!;
    expect(params).toEqual({ do_remote_prefill: true, do_remote_decode: false, remote_block_ids: [7], remote_engine_id: 'p-0', remote_host: '127.0.0.1', remote_port: 8000 });
    expect(pdRefusal('decode', { kv_transfer_params: params })).toBeNull();
    expect(kvFrom({ kv_transfer_params: params })).toBe('p-0');
    expect(pdRefusal('decode', {})).toMatch(/no kv_transfer_params/);
    expect(pdRefusal('decode', { kv_transfer_params: null })).toMatch(/no kv_transfer_params/);
    expect(pdRefusal('decode', { kv_transfer_params: { do_remote_decode: true } })).toMatch(/are not a prefill's/);
  });

  it('--pd-role takes prefill or decode', () => {
    expect(parseMockArgs(['--pd-role', 'prefill']).pdRole).toBe('prefill');
    expect(parseMockArgs([]).pdRole).toBeNull();
    expect(() => parseMockArgs(['--pd-role=both'])).toThrow('--pd-role must be prefill, decode, sglang-prefill or sglang-decode, got "both"');
    expect(parseMockArgs(['--pd-role', 'sglang-decode', '--bootstrap-port', '8998'])).toMatchObject({ pdRole: 'sglang-decode', bootstrapPort: 8998 });
  });
});
