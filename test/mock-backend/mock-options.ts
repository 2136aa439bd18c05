/** Command-line options of the mock OpenAI-compatible backend, parsed and validated once. */

/**
 * Whose members a whole chat or completions answer has, in whose order; `llamacpp`: answers as
 * OpenAI's, streams with the usage on the last token chunk (see MockOptions.answerShape).
 */
export type AnswerShape = 'openai' | 'vllm' | 'sglang' | 'llamacpp';

export interface MockOptions {
  /** Interface to listen on. */
  readonly host: string;
  /** Port to listen on; 0 picks a free one. */
  readonly port: number;
  /** Pod name, echoed in answers (`pod`) and in the `x-mock-pod` header. */
  readonly name: string;
  /** Delay before answering (before the first chunk of a stream). */
  readonly latencyMs: number;
  /** Stream pace; 0 sends all chunks at once. */
  readonly tokensPerSecond: number;
  /** Completion length in tokens (each token is the word "tok "). */
  readonly outputTokens: number;
  /** Fraction (0..1) of /v1 requests answered 500. */
  readonly failRate: number;
  /** Report usage in answers and (when asked) in streams. */
  readonly usage: boolean;
  /**
   * Members of a whole chat or completions answer: OpenAI's (usage last), or vLLM's or SGLang's
   * order and extra members after usage. `llamacpp`: whole answers as OpenAI's; a stream asked for
   * usage carries it (and `timings` after it) on its last token chunk, the one with finish_reason,
   * as llama.cpp's server does, and sends no usage-only chunk.
   */
  readonly answerShape: AnswerShape;
  /** Serve GET /metrics in this engine's names (null: no /metrics). */
  readonly metricsEngine: 'vllm' | 'sglang' | null;
  /** Waiting queue length reported in /metrics. */
  readonly metricsWaiting: number;
  /** KV-cache use (0..1) reported in /metrics. */
  readonly metricsKv: number;
  /** Time to first token reported in /metrics (histogram sum/count grow by one per request answered), ms. */
  readonly metricsTtftMs: number;
  /**
   * Act as a vLLM prefill or decode pod of prefill/decode disaggregation (mock-pd.ts): `prefill`
   * takes only a one-token request without stream and answers `kv_transfer_params` when asked for
   * a remote decode; `decode` takes only a request carrying a prefill's `kv_transfer_params`.
   */
  readonly pdRole: 'prefill' | 'decode' | 'sglang-prefill' | 'sglang-decode' | null;
  /** An sglang-decode pod's bootstrap port: the prefill pods' HTTP port, where it joins their bootstrap rooms (mock-sglang.ts). */
  readonly bootstrapPort: number;
}

export const DEFAULT_MOCK_OPTIONS: MockOptions = Object.freeze({
  host: '127.0.0.1',
  port: 0,
  name: 'mock-pod',
  latencyMs: 0,
  tokensPerSecond: 0,
  outputTokens: 16,
  failRate: 0,
  usage: true,
  answerShape: 'openai',
  metricsEngine: null,
  metricsWaiting: 0,
  metricsKv: 0,
  metricsTtftMs: 50,
  pdRole: null,
  bootstrapPort: 0,
});

export const MOCK_USAGE = `Usage: node dist/test/mock-backend/mock-backend.js [options]
  --port N               port to listen on, 0 = pick a free one (default 0)
  --host HOST            interface to listen on (default 127.0.0.1)
  --name NAME            pod name echoed in answers and in header x-mock-pod (default mock-pod)
  --latency-ms N         delay before answering / before the first chunk (default 0)
  --tokens-per-second N  stream pace, 0 = as fast as possible (default 0)
  --output-tokens N      completion length in tokens (default 16), less when the request's
                         max_tokens (max_completion_tokens, max_output_tokens) is less
  --fail-rate F          fraction 0..1 of requests answered 500 (default 0)
  --no-usage             omit usage from answers and streams
  --answer-shape S       whole chat/completions answers as openai (usage last), vllm (its order,
                         null members after usage) or sglang (metadata after usage); llamacpp:
                         as openai, but a stream's usage on its last token chunk (default openai)
  --metrics-engine E     serve GET /metrics as vllm or sglang does (default: no /metrics)
  --metrics-waiting N    waiting queue reported in /metrics (default 0)
  --metrics-kv F         KV-cache use 0..1 reported in /metrics (default 0)
  --metrics-ttft-ms N    time to first token reported in /metrics (default 50)
  --pd-role R            act as a vLLM prefill pod (takes max_tokens 1 without stream only; answers
                         kv_transfer_params when asked for a remote decode) or decode pod (takes only
                         requests with a prefill's kv_transfer_params); sglang-prefill or
                         sglang-decode: an SGLang pod (bootstrap_room and bootstrap_host; the
                         decode joins the prefill's room at bootstrap_host:--bootstrap-port);
                         default none
  --bootstrap-port N     an sglang-decode pod's bootstrap port (the prefill pods' HTTP port)
Per-request headers: x-mock-latency-ms, x-mock-status, x-mock-output-tokens, x-mock-retry-after,
x-mock-hang, x-mock-close; a stream failing after N token events: x-mock-error-after N (its own
error event, x-mock-error-shape openai, vllm, object, chunk or llamacpp, then [DONE]),
x-mock-cut-after N (the connection closed; x-mock-cut-mid-event: within the next event),
x-mock-stall-after N (nothing more). POST /fail-rate?rate=F changes --fail-rate while it runs.`;

export class MockOptionsError extends Error {}

type NumberKey = 'port' | 'latencyMs' | 'tokensPerSecond' | 'outputTokens' | 'failRate' | 'metricsWaiting' | 'metricsKv' | 'metricsTtftMs' | 'bootstrapPort';

const NUMBER_FLAGS: Readonly<Record<string, { key: NumberKey; max: number; integer: boolean }>> = {
  '--port': { key: 'port', max: 65535, integer: true },
  '--latency-ms': { key: 'latencyMs', max: 3_600_000, integer: false },
  '--tokens-per-second': { key: 'tokensPerSecond', max: 1e9, integer: false },
  '--output-tokens': { key: 'outputTokens', max: 10_000_000, integer: true },
  '--fail-rate': { key: 'failRate', max: 1, integer: false },
  '--metrics-waiting': { key: 'metricsWaiting', max: 1e9, integer: true },
  '--metrics-kv': { key: 'metricsKv', max: 1, integer: false },
  '--metrics-ttft-ms': { key: 'metricsTtftMs', max: 3_600_000, integer: false },
  '--bootstrap-port': { key: 'bootstrapPort', max: 65535, integer: true },
};

/** Parses `--flag value` / `--flag=value` arguments. Throws MockOptionsError naming the bad flag. */
export function parseMockArgs(argv: readonly string[]): MockOptions {
  const options: { -readonly [K in keyof MockOptions]: MockOptions[K] } = { ...DEFAULT_MOCK_OPTIONS };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const eq = arg.indexOf('=');
    const flag = eq === -1 ? arg : arg.slice(0, eq);
    if (flag === '--no-usage') {
      if (eq !== -1) throw new MockOptionsError('--no-usage takes no value');
      options.usage = false;
      continue;
    }
    if (flag !== '--host' && flag !== '--name' && flag !== '--metrics-engine' && flag !== '--answer-shape' && flag !== '--pd-role' && NUMBER_FLAGS[flag] === undefined) {
      throw new MockOptionsError(`unknown option ${JSON.stringify(arg)}\n${MOCK_USAGE}`);
    }
    let value: string;
    if (eq !== -1) {
      value = arg.slice(eq + 1);
    } else {
      if (i + 1 >= argv.length) throw new MockOptionsError(`${flag} needs a value`);
      value = argv[++i];
    }
    if (flag === '--metrics-engine') {
      if (value !== 'vllm' && value !== 'sglang') throw new MockOptionsError(`--metrics-engine must be vllm or sglang, got ${JSON.stringify(value)}`);
      options.metricsEngine = value;
      continue;
    }
    if (flag === '--pd-role') {
      if (value !== 'prefill' && value !== 'decode' && value !== 'sglang-prefill' && value !== 'sglang-decode') {
        throw new MockOptionsError(`--pd-role must be prefill, decode, sglang-prefill or sglang-decode, got ${JSON.stringify(value)}`);
      }
      options.pdRole = value;
      continue;
    }
    if (flag === '--answer-shape') {
      if (value !== 'openai' && value !== 'vllm' && value !== 'sglang' && value !== 'llamacpp') {
        throw new MockOptionsError(`--answer-shape must be openai, vllm, sglang or llamacpp, got ${JSON.stringify(value)}`);
      }
      options.answerShape = value;
      continue;
    }
    if (flag === '--host' || flag === '--name') {
      if (value === '') throw new MockOptionsError(`${flag} must not be empty`);
      options[flag === '--host' ? 'host' : 'name'] = value;
      continue;
    }
    const spec = NUMBER_FLAGS[flag];
    options[spec.key] = parseBoundedNumber(flag, value, spec.max, spec.integer);
  }
  return Object.freeze(options);
}

/** A number in [0, max] (an integer when asked); the error names `what`. */
export function parseBoundedNumber(what: string, value: string, max: number, integer: boolean): number {
  const n = value.trim() === '' ? NaN : Number(value);
  if (!Number.isFinite(n) || n < 0 || n > max || (integer && !Number.isInteger(n))) {
    throw new MockOptionsError(`${what} must be ${integer ? 'an integer' : 'a number'} from 0 to ${max}, got ${JSON.stringify(value)}`);
  }
  return n;
}
