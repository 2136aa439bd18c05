/**
 * The mock as a vLLM pod of prefill/decode disaggregation (--pd-role). A prefill pod takes only
 * what the router's prefill request is (one token, no stream) and, asked for a remote decode
 * (`kv_transfer_params.do_remote_decode`), answers the parameters a decode pod pulls the KV cache
 * with, as vLLM's NixlConnector does, naming itself as the remote engine. A decode pod takes only
 * a request that carries such parameters (do_remote_prefill) and says whose they were in the
 * `x-mock-kv-from` header of its answer.
 */

/** Why the request is refused by a pod of `role` (400), or null when it takes it. */
export function pdRefusal(role: 'prefill' | 'decode', body: Record<string, unknown>): string | null {
  if (role === 'prefill') {
    if (body.stream !== undefined || body.stream_options !== undefined) return 'mock prefill pod: a prefill request has no stream or stream_options';
    if (body.max_tokens !== 1) return `mock prefill pod: a prefill request has max_tokens 1, got ${JSON.stringify(body.max_tokens)}`;
    if (body.max_completion_tokens !== undefined && body.max_completion_tokens !== null && body.max_completion_tokens !== 1) {
      return `mock prefill pod: a prefill request has max_completion_tokens 1 when set, got ${JSON.stringify(body.max_completion_tokens)}`;
    }
    return null;
  }
  const params = body.kv_transfer_params as Record<string, unknown> | undefined | null;
  if (params === undefined || params === null || typeof params !== 'object') return 'mock decode pod: no kv_transfer_params from a prefill pod';
  if (params.do_remote_prefill !== true || typeof params.remote_engine_id !== 'string') {
    return `mock decode pod: kv_transfer_params are not a prefill's: ${JSON.stringify(params)}`;
  }
  return null;
}

/** The kv_transfer_params a prefill pod named `pod` answers (vLLM NixlConnector's shape), or null when not asked for a remote decode. */
export function prefillKvParams(body: Record<string, unknown>, pod: string, host: string, port: number, sequence: number): Record<string, unknown> | null {
  const asked = body.kv_transfer_params as Record<string, unknown> | undefined | null;
  if (asked === undefined || asked === null || asked.do_remote_decode !== true) return null;
  return { do_remote_prefill: true, do_remote_decode: false, remote_block_ids: [sequence], remote_engine_id: pod, remote_host: host, remote_port: port };
}

/** Who the decode request's KV cache came from (the x-mock-kv-from header). */
export function kvFrom(body: Record<string, unknown>): string {
  const params = body.kv_transfer_params as Record<string, unknown> | undefined | null;
  return params !== undefined && params !== null && typeof params.remote_engine_id === 'string' ? params.remote_engine_id : '';
}
