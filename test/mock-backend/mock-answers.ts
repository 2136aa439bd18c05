/**
 * OpenAI-shaped answers of the mock backend. Token accounting of the mock, by definition:
 * - prompt tokens = ceil(characters / 4) of the prompt (completions: `prompt`, a string or array of
 *   strings; token-id arrays count one token per id), of the chat messages' text content, or of
 *   the Responses API's `instructions` and `input` (a string, or message items' text content);
 * - the completion is `outputTokens` times the word "tok ", each word being one token.
 *
 * The Responses API (/v1/responses) answers in its own shape: a `response` object with `output`
 * items and `usage.input_tokens`/`output_tokens`; its stream is OpenAI's documented event sequence
 * (`event:` and `data:` lines), ending with `response.completed`, whose response carries the usage.
 * Embeddings (/v1/embeddings) answer OpenAI's list of embedding objects, one per `input` (a string,
 * an array of strings, token ids or arrays of token ids), each a vector of EMBEDDING_DIMENSIONS
 * floats (base64 of their float32 bytes with `encoding_format: "base64"`, as the openai SDKs ask),
 * with `usage.prompt_tokens` and `total_tokens` only: nothing is generated.
 */

import type { AnswerShape } from './mock-options.js';
import { Buffer } from 'node:buffer';

export type MockApi = 'chat' | 'completions' | 'responses' | 'embeddings';

export interface MockUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** What one answer is built from. */
export interface AnswerSpec {
  readonly api: MockApi;
  readonly id: string;
  readonly created: number;
  readonly model: string;
  readonly pod: string;
  readonly outputTokens: number;
  readonly promptTokens: number;
  /** Include usage in the answer (non-stream) / send the usage chunk (stream, when asked). */
  readonly usage: boolean;
  /** Members of a whole chat or completions answer (see MockOptions.answerShape); OpenAI's when absent. */
  readonly shape?: AnswerShape;
}

export const TOKEN_WORD = 'tok ';

const textCache = new Map<number, string>();
/** The completion text: `n` times "tok " (cached, the same few lengths repeat). */
export function completionText(n: number): string {
  let text = textCache.get(n);
  if (text === undefined) {
    text = TOKEN_WORD.repeat(n);
    if (textCache.size < 64) textCache.set(n, text);
  }
  return text;
}

/** The prompt token count of a request body, as the mock defines it (see the file comment). */
export function mockPromptTokens(body: Record<string, unknown>, api: MockApi): number {
  let chars = 0;
  let tokens = 0;
  if (api === 'chat') {
    const messages = body.messages;
    if (Array.isArray(messages)) {
      for (const message of messages) {
        if (typeof message === 'object' && message !== null) chars += contentChars((message as { content?: unknown }).content);
      }
    }
  } else if (api === 'responses') {
    if (typeof body.instructions === 'string') chars += body.instructions.length;
    const input = body.input;
    if (typeof input === 'string') chars += input.length;
    else if (Array.isArray(input)) {
      for (const item of input) {
        if (typeof item === 'object' && item !== null) chars += contentChars((item as { content?: unknown }).content);
      }
    }
  } else {
    const prompt = api === 'embeddings' ? body.input : body.prompt;
    if (typeof prompt === 'string') {
      chars = prompt.length;
    } else if (Array.isArray(prompt)) {
      for (const item of prompt) {
        if (typeof item === 'string') chars += item.length;
        else if (typeof item === 'number') tokens++;
        else if (Array.isArray(item)) tokens += item.length;
      }
    }
  }
  return tokens + Math.ceil(chars / 4);
}

function contentChars(content: unknown): number {
  if (typeof content === 'string') return content.length;
  if (!Array.isArray(content)) return 0;
  let chars = 0;
  for (const part of content) {
    const text = typeof part === 'object' && part !== null ? (part as { text?: unknown }).text : undefined;
    if (typeof text === 'string') chars += text.length;
  }
  return chars;
}

export function usageOf(spec: AnswerSpec): MockUsage {
  return {
    prompt_tokens: spec.promptTokens,
    completion_tokens: spec.outputTokens,
    total_tokens: spec.promptTokens + spec.outputTokens,
  };
}

/** The usage of a Responses API answer. */
function responsesUsage(spec: AnswerSpec): Record<string, unknown> {
  return {
    input_tokens: spec.promptTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: spec.outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: spec.promptTokens + spec.outputTokens,
  };
}

function responsesMessage(spec: AnswerSpec, text: string, status: string): Record<string, unknown> {
  return { id: `msg_${spec.id}`, type: 'message', status, role: 'assistant', content: text === '' && status !== 'completed' ? [] : [outputText(text)] };
}

function outputText(text: string): Record<string, unknown> {
  return { type: 'output_text', text, annotations: [], logprobs: [] };
}

/**
 * A Responses API `response` object, members in OpenAI's order (`usage` before `user` and
 * `metadata`). `usage` is null before the answer is complete, and without --no-usage's usage.
 */
function responseObject(spec: AnswerSpec, status: 'in_progress' | 'completed', output: unknown[]): Record<string, unknown> {
  return {
    id: spec.id, object: 'response', created_at: spec.created, status, background: false, error: null, incomplete_details: null,
    instructions: null, max_output_tokens: null, model: spec.model, pod: spec.pod, output, parallel_tool_calls: true,
    previous_response_id: null, reasoning: { effort: null, summary: null }, service_tier: 'default', store: false,
    temperature: 1, text: { format: { type: 'text' } }, tool_choice: 'auto', tools: [], top_p: 1, truncation: 'disabled',
    usage: status === 'completed' && spec.usage ? responsesUsage(spec) : null, user: null, metadata: {},
  };
}

/** Length of the mock's embedding vectors. */
export const EMBEDDING_DIMENSIONS = 8;

/** How many inputs an embeddings request has: one per string or token-id array, else one. */
function embeddingInputs(input: unknown): number {
  if (!Array.isArray(input) || input.length === 0) return 1;
  return typeof input[0] === 'number' ? 1 : input.length;
}

/**
 * An embeddings answer (OpenAI's shape) for `body`: one vector per input, its values made from
 * the input's index; base64 of the float32 bytes when `encoding_format` is "base64".
 */
export function embeddingsAnswer(spec: AnswerSpec, body: Record<string, unknown>): string {
  const base64 = body.encoding_format === 'base64';
  const data = Array.from({ length: embeddingInputs(body.input) }, (_, index) => {
    const vector = Float32Array.from({ length: EMBEDDING_DIMENSIONS }, (_, d) => (index + 1) / (d + 2));
    const embedding = base64 ? Buffer.from(vector.buffer).toString('base64') : Array.from(vector);
    return { object: 'embedding', index, embedding };
  });
  const answer: Record<string, unknown> = { object: 'list', data, model: spec.model, pod: spec.pod };
  if (spec.usage) answer.usage = { prompt_tokens: spec.promptTokens, total_tokens: spec.promptTokens };
  return JSON.stringify(answer);
}

/** The complete (non-stream) answer body. */
export function jsonAnswer(spec: AnswerSpec): string {
  const text = completionText(spec.outputTokens);
  if (spec.api === 'responses') return JSON.stringify(responseObject(spec, 'completed', [responsesMessage(spec, text, 'completed')]));
  if (spec.shape === 'vllm') return vllmAnswer(spec, text);
  if (spec.shape === 'sglang') return sglangAnswer(spec, text);
  const choice = spec.api === 'chat'
    ? { index: 0, message: { role: 'assistant', content: text }, logprobs: null, finish_reason: 'length' }
    : { index: 0, text, logprobs: null, finish_reason: 'length' };
  const answer: Record<string, unknown> = {
    id: spec.id,
    object: spec.api === 'chat' ? 'chat.completion' : 'text_completion',
    created: spec.created,
    model: spec.model,
    pod: spec.pod,
    choices: [choice],
  };
  if (spec.usage) answer.usage = usageOf(spec);
  return JSON.stringify(answer);
}

/**
 * vLLM's whole answer: the members of its ChatCompletionResponse / CompletionResponse in their
 * order, the unset ones null (its `model_dump()` keeps them): usage, then prompt_logprobs,
 * prompt_token_ids (chat) and kv_transfer_params. Its usage: prompt_tokens, total_tokens,
 * completion_tokens, prompt_tokens_details. `pod` follows `model`, as in every mock answer.
 */
function vllmAnswer(spec: AnswerSpec, text: string): string {
  const chat = spec.api === 'chat';
  const choice = chat
    ? {
      index: 0,
      message: { role: 'assistant', content: text, refusal: null, annotations: null, audio: null, function_call: null, tool_calls: [], reasoning: null },
      logprobs: null, finish_reason: 'length', stop_reason: null, token_ids: null,
    }
    : { index: 0, text, logprobs: null, finish_reason: 'length', stop_reason: null, token_ids: null, prompt_logprobs: null, prompt_token_ids: null };
  const answer: Record<string, unknown> = {
    id: spec.id, object: chat ? 'chat.completion' : 'text_completion', created: spec.created, model: spec.model, pod: spec.pod,
    choices: [choice], service_tier: null, system_fingerprint: null,
  };
  if (spec.usage) {
    answer.usage = {
      prompt_tokens: spec.promptTokens, total_tokens: spec.promptTokens + spec.outputTokens, completion_tokens: spec.outputTokens, prompt_tokens_details: null,
    };
  }
  if (chat) {
    answer.prompt_logprobs = null;
    answer.prompt_token_ids = null;
  }
  answer.kv_transfer_params = null;
  return JSON.stringify(answer);
}

/**
 * SGLang's whole answer: usage, then `metadata` with the weight version. Its usage:
 * prompt_tokens, total_tokens, completion_tokens, prompt_tokens_details, reasoning_tokens.
 */
function sglangAnswer(spec: AnswerSpec, text: string): string {
  const chat = spec.api === 'chat';
  const choice = chat
    ? { index: 0, message: { role: 'assistant', content: text, reasoning_content: null, tool_calls: null }, logprobs: null, finish_reason: 'length', matched_stop: null }
    : { index: 0, text, logprobs: null, finish_reason: 'length', matched_stop: null };
  const answer: Record<string, unknown> = {
    id: spec.id, object: chat ? 'chat.completion' : 'text_completion', created: spec.created, model: spec.model, pod: spec.pod, choices: [choice],
  };
  if (spec.usage) {
    answer.usage = {
      prompt_tokens: spec.promptTokens, total_tokens: spec.promptTokens + spec.outputTokens, completion_tokens: spec.outputTokens,
      prompt_tokens_details: null, reasoning_tokens: 0,
    };
  }
  answer.metadata = { weight_version: 'default' };
  return JSON.stringify(answer);
}

/**
 * The events of a streamed Responses API answer, OpenAI's documented sequence: response.created,
 * response.in_progress, response.output_item.added, response.content_part.added, one
 * response.output_text.delta per token, response.output_text.done, response.content_part.done,
 * response.output_item.done, response.completed (whose response carries the usage unless
 * --no-usage). Each event has an `event:` line naming its type and a `data:` line.
 */
export function responsesEvents(spec: AnswerSpec): string[] {
  let sequence = 0;
  const event = (type: string, data: Record<string, unknown>): string =>
    `event: ${type}
data: ${JSON.stringify({ type, sequence_number: sequence++, ...data })}

`;
  const text = completionText(spec.outputTokens);
  const at = { item_id: `msg_${spec.id}`, output_index: 0, content_index: 0 };
  const events = [
    event('response.created', { response: responseObject(spec, 'in_progress', []) }),
    event('response.in_progress', { response: responseObject(spec, 'in_progress', []) }),
    event('response.output_item.added', { output_index: 0, item: responsesMessage(spec, '', 'in_progress') }),
    event('response.content_part.added', { ...at, part: outputText('') }),
  ];
  for (let i = 0; i < spec.outputTokens; i++) events.push(event('response.output_text.delta', { ...at, delta: TOKEN_WORD, logprobs: [] }));
  const done = responsesMessage(spec, text, 'completed');
  events.push(
    event('response.output_text.done', { ...at, text, logprobs: [] }),
    event('response.content_part.done', { ...at, part: outputText(text) }),
    event('response.output_item.done', { output_index: 0, item: done }),
    event('response.completed', { response: responseObject(spec, 'completed', [done]) }),
  );
  return events;
}

/**
 * The events of a streamed answer, as SSE text, one per array element: one chunk per token
 * (the last carries finish_reason), the usage chunk when asked for and enabled, then `[DONE]`.
 * With `includeUsage`, token chunks carry `"usage":null` as OpenAI's do. The `llamacpp` shape
 * instead puts the usage, and `timings` after it, on the last token chunk, as llama.cpp's server
 * does, and sends no usage chunk.
 */
export function sseEvents(spec: AnswerSpec, includeUsage: boolean): string[] {
  const chat = spec.api === 'chat';
  const object = chat ? 'chat.completion.chunk' : 'text_completion';
  const head = `data: {"id":${JSON.stringify(spec.id)},"object":"${object}","created":${spec.created},"model":${JSON.stringify(spec.model)},"pod":${JSON.stringify(spec.pod)},"choices":`;
  const onLast = spec.shape === 'llamacpp';
  const usageTail = includeUsage && !onLast ? ',"usage":null}\n\n' : '}\n\n';
  const lastTail = includeUsage && onLast && spec.usage
    ? `,"usage":${JSON.stringify(usageOf(spec))},"timings":{"prompt_n":${spec.promptTokens},"predicted_n":${spec.outputTokens}}}\n\n`
    : usageTail;
  const word = JSON.stringify(TOKEN_WORD);
  const events: string[] = [];
  for (let i = 0; i < spec.outputTokens; i++) {
    const last = i === spec.outputTokens - 1;
    const finish = last ? '"length"' : 'null';
    const choice = chat
      ? `[{"index":0,"delta":{${i === 0 ? '"role":"assistant",' : ''}"content":${word}},"logprobs":null,"finish_reason":${finish}}]`
      : `[{"index":0,"text":${word},"logprobs":null,"finish_reason":${finish}}]`;
    events.push(head + choice + (last ? lastTail : usageTail));
  }
  if (includeUsage && spec.usage && !onLast) events.push(`${head}[],"usage":${JSON.stringify(usageOf(spec))}}\n\n`);
  events.push('data: [DONE]\n\n');
  return events;
}

/**
 * How a model server says in a stream it answered 200 that the generation failed partway
 * (x-mock-error-shape): `openai`, OpenAI's `{"error":{...}}`; `vllm`, the same as vLLM and SGLang
 * write it (Python's json.dumps, older vLLM's ErrorResponse inside); `object`, vLLM's bare
 * ErrorResponse, `"object": "error"` at the top; `chunk`, a chunk with its `error` member after
 * its `id` and before its `choices`, the choice ended with `"finish_reason": "error"` (as OpenRouter
 * sends it); `llamacpp`, llama.cpp's server's SSE field named `error` instead of `data`.
 */
export type StreamErrorShape = 'openai' | 'vllm' | 'object' | 'chunk' | 'llamacpp';
export const STREAM_ERROR_SHAPES: readonly StreamErrorShape[] = ['openai', 'vllm', 'object', 'chunk', 'llamacpp'];

/** The error event (and `[DONE]` after it) of a stream whose generation failed after `tokens` tokens. */
export function streamErrorEvents(shape: StreamErrorShape, pod: string, tokens: number): string[] {
  const message = `mock backend ${pod} failed the generation after ${tokens} tokens`;
  return [streamErrorEvent(shape, pod, message), 'data: [DONE]\n\n'];
}

function streamErrorEvent(shape: StreamErrorShape, pod: string, message: string): string {
  const text = JSON.stringify(message);
  switch (shape) {
    case 'openai': return `data: ${JSON.stringify({ error: { message, type: 'server_error', param: null, code: 'generation_failed' } })}\n\n`;
    case 'vllm': return `data: {"error": {"object": "error", "message": ${text}, "type": "InternalServerError", "param": null, "code": 500}}\n\n`;
    case 'object': return `data: {"object": "error", "message": ${text}, "type": "InternalServerError", "param": null, "code": 500}\n\n`;
    case 'chunk': return `data: {"id":"gen-${pod}-error","object":"chat.completion.chunk","created":1795000000,"model":"mock","error":{"code":"server_error","message":${text}},`
      + '"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}\n\n';
    case 'llamacpp': return `error: {"code":500,"message":${text},"type":"server_error"}\n\n`;
  }
}

/** The JSON error body the mock answers with for injected failures and bad requests. */
export function errorBody(status: number, message: string): string {
  return JSON.stringify({ error: { message, type: status >= 500 ? 'server_error' : 'invalid_request_error', code: status } });
}
