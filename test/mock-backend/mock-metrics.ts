/** The Prometheus text a vLLM or SGLang pod serves on /metrics, with the mock's chosen values. */
import type { MockOptions } from './mock-options.js';

/** `answered`: requests answered so far (the TTFT histogram's count); `running`: exchanges open now. */
export function mockMetricsText(o: MockOptions, answered: number, running: number): string {
  const ttftSum = (answered * o.metricsTtftMs) / 1000;
  const model = `model_name="${o.name}"`;
  if (o.metricsEngine === 'sglang') {
    return [
      '# HELP sglang:num_queue_reqs The number of requests in the waiting queue.',
      '# TYPE sglang:num_queue_reqs gauge',
      `sglang:num_queue_reqs{${model}} ${o.metricsWaiting}`,
      '# TYPE sglang:num_running_reqs gauge',
      `sglang:num_running_reqs{${model}} ${running}`,
      '# TYPE sglang:token_usage gauge',
      `sglang:token_usage{${model}} ${o.metricsKv}`,
      '# TYPE sglang:time_to_first_token_seconds histogram',
      `sglang:time_to_first_token_seconds_bucket{${model},le="+Inf"} ${answered}`,
      `sglang:time_to_first_token_seconds_sum{${model}} ${ttftSum}`,
      `sglang:time_to_first_token_seconds_count{${model}} ${answered}`,
      '',
    ].join('\n');
  }
  return [
    '# HELP vllm:num_requests_waiting Number of requests waiting to be processed.',
    '# TYPE vllm:num_requests_waiting gauge',
    `vllm:num_requests_waiting{${model}} ${o.metricsWaiting}`,
    '# TYPE vllm:num_requests_running gauge',
    `vllm:num_requests_running{${model}} ${running}`,
    '# TYPE vllm:kv_cache_usage_perc gauge',
    `vllm:kv_cache_usage_perc{${model}} ${o.metricsKv}`,
    '# TYPE vllm:time_to_first_token_seconds histogram',
    `vllm:time_to_first_token_seconds_bucket{${model},le="0.1"} ${answered}`,
    `vllm:time_to_first_token_seconds_bucket{${model},le="+Inf"} ${answered}`,
    `vllm:time_to_first_token_seconds_sum{${model}} ${ttftSum}`,
    `vllm:time_to_first_token_seconds_count{${model}} ${answered}`,
    '',
  ].join('\n');
}
