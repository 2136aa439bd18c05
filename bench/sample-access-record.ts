import type { AccessRecord } from 'inference-router/observe/access-record';

/** The `i`-th record of the access-log benchmarks: a chat completion's, every twentieth a 429's. */
export function sampleAccessRecord(i: number): AccessRecord {
  return {
    timestamp: Date.now(),
    method: 'POST',
    path: '/v1/chat/completions?api-version=2024-10-01',
    protocol: 'HTTP/1.1',
    status_code: i % 20 === 0 ? 429 : 200,
    error: i % 20 === 0 ? { type: 'rate_limit', message: 'input token rate limit exceeded' } : null,
    model_name: 'llama-3-8b-instruct',
    model_route: 'default/llama-3-8b',
    model_server: 'default/llama-3-8b-vllm',
    selected_pod: 'llama-3-8b-vllm-7d9f8c6b5-x2k9p',
    request_id: '3f2a1c9e-7b4d-4e8a-9c1f-' + String(i).padStart(12, '0'),
    input_tokens: 128,
    output_tokens: 512,
    duration_total: 2350,
    duration_request_processing: 4,
    duration_upstream_processing: 2340,
    duration_response_processing: 1,
  };
}
