import type { DisaggregatedBodies, InferenceRequest, UpstreamBody } from './inference-api.js';
import { buildUpstreamBody } from './openai-body.js';
import type { ParsedRequest } from './openai-request.js';
import { rewriteMembers, type MemberChange } from './json-members.js';
import { Buffer } from 'node:buffer';

const ONE = Buffer.from('1');
/** What a NIXL (or Mooncake) prefill pod is asked to do: keep the KV cache for a remote decode. */
const REMOTE_DECODE = Buffer.from('{"do_remote_decode":true,"do_remote_prefill":false}');
const NULL = Buffer.from('null');

/** The prefill request's changes: no stream, one token (as kthena's router asks a vLLM prefill pod). */
const PREFILL: readonly MemberChange[] = [
  { name: 'stream', value: null },
  { name: 'stream_options', value: null },
  { name: 'max_tokens', value: ONE },
  { name: 'max_completion_tokens', value: ONE, ifPresent: true },
];
const PREFILL_KV: readonly MemberChange[] = [...PREFILL, { name: 'kv_transfer_params', value: REMOTE_DECODE }];

/**
 * The bodies of a request served by a prefill pod, then a decode pod (prefill/decode
 * disaggregation of vLLM or SGLang pods), for /v1/completions and /v1/chat/completions: the members
 * changed, the client's other bytes as they came.
 */
export const openAiDisaggregation: DisaggregatedBodies = {
  supports: (req: InferenceRequest) => {
    const api = (req as ParsedRequest).api;
    return api === 'completions' || api === 'chat';
  },

  /**
   * `stream` and `stream_options` removed, `max_tokens` 1, `max_completion_tokens` 1 when the
   * client set it, `model` rewritten as for any pod; `kvTransfer`: `kv_transfer_params` asks the
   * pod to keep the KV cache for a remote decode.
   */
  prefillBody: (raw: Buffer, req: InferenceRequest, model: string | null, kvTransfer: boolean) => {
    const changes = kvTransfer ? PREFILL_KV : PREFILL;
    const rewriteModel = model !== null && model !== req.model;
    return rewriteMembers(raw, rewriteModel ? [...changes, { name: 'model', value: Buffer.from(JSON.stringify(model)) }] : changes);
  },

  /**
   * The body any pod would get (stream usage asked for, `model` rewritten), with
   * `kv_transfer_params` set to `kvParams` (the prefill answer's) when not null.
   */
  decodeBody: (raw: Buffer, req: InferenceRequest, model: string | null, kvParams: Buffer | null): UpstreamBody => {
    const up = buildUpstreamBody(raw, req as ParsedRequest, model);
    if (kvParams === null) return up;
    return { body: rewriteMembers(up.body, [{ name: 'kv_transfer_params', value: kvParams }]), stripUsage: up.stripUsage };
  },

  /**
   * As prefillBody without KV transfer, with `bootstrap_room` (the room's digits as a JSON integer),
   * as the route API's router asks an SGLang prefill pod.
   */
  sglangPrefillBody: (raw: Buffer, req: InferenceRequest, model: string | null, room: string) => {
    const changes: MemberChange[] = [...PREFILL, { name: 'bootstrap_room', value: Buffer.from(room) }];
    if (model !== null && model !== req.model) changes.push({ name: 'model', value: Buffer.from(JSON.stringify(model)) });
    return rewriteMembers(raw, changes);
  },

  /**
   * The body any pod would get with `bootstrap_room` (the prefill's) and `bootstrap_host` (the
   * prefill pod's host, where the decode pod fetches the KV cache from), as the route API's router
   * asks an SGLang decode pod. No `bootstrap_port`: the pods use their configured one.
   */
  sglangDecodeBody: (raw: Buffer, req: InferenceRequest, model: string | null, room: string, host: string): UpstreamBody => {
    const up = buildUpstreamBody(raw, req as ParsedRequest, model);
    const body = rewriteMembers(up.body, [
      { name: 'bootstrap_room', value: Buffer.from(room) },
      { name: 'bootstrap_host', value: Buffer.from(JSON.stringify(host)) },
    ]);
    return { body, stripUsage: up.stripUsage };
  },

  kvTransferParams: (answer: Buffer): Buffer | null => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(answer.toString('utf8'));
    } catch {
      return null;
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return null;
    const params = (parsed as Record<string, unknown>).kv_transfer_params;
    return params === undefined || params === null ? NULL : Buffer.from(JSON.stringify(params));
  },
};
