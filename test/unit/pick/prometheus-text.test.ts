import { describe, expect, it } from 'vitest';
import { parseSampleLine, PrometheusTextError, sumSamples } from '../../../src/pick/prometheus-text.js';

const VLLM = `# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 7.0
vllm:num_requests_waiting{engine="1",model_name="m"} 2
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.001",model_name="m"} 0.0
vllm:time_to_first_token_seconds_sum{model_name="m \\"quoted\\", {braces}"} 1.5e1 1700000000000
vllm:time_to_first_token_seconds_count{model_name="m"} 30
python_gc_objects_collected_total{generation="0"} 1234.0
vllm:kv_cache_usage_perc NaN\r
`;

describe('Prometheus text reader', () => {
  it('sums the wanted series across label sets and skips the rest', () => {
    const got = sumSamples(VLLM, new Set(['vllm:num_requests_waiting', 'vllm:time_to_first_token_seconds_sum', 'vllm:time_to_first_token_seconds_count', 'missing']));
    expect(Object.fromEntries(got)).toEqual({
      'vllm:num_requests_waiting': 9,
      'vllm:time_to_first_token_seconds_sum': 15,
      'vllm:time_to_first_token_seconds_count': 30,
    });
    expect(Number.isNaN(sumSamples(VLLM, new Set(['vllm:kv_cache_usage_perc'])).get('vllm:kv_cache_usage_perc'))).toBe(true);
  });

  it('reads special values and timestamps', () => {
    expect(parseSampleLine('a +Inf').value).toBe(Infinity);
    expect(parseSampleLine('a -Inf').value).toBe(-Infinity);
    expect(parseSampleLine('a{} -1.5e-3 -5').value).toBe(-0.0015);
    expect(parseSampleLine('a{x="1",} 3').value).toBe(3);
  });

  it.each([
    ['9abc 1', /line 1: bad metric name/],
    ['a{x=1} 1', /label value must be quoted/],
    ['a{x="1} 1', /unterminated label value/],
    ['a{x="\\q"} 1', /bad escape/],
    ['a{x="1" y="2"} 1', /bad labels/],
    ['a{1x="1"} 1', /bad label name/],
    ['a', /expected a value/],
    ['a one', /bad value/],
    ['a 1 2 3', /expected a value and an optional timestamp/],
    ['a 1 soon', /bad timestamp/],
    ['<html>', /bad metric name/],
  ])('refuses %j', (line, message) => {
    expect(() => sumSamples(`ok 1\n${line}\n`, new Set(['ok']))).toThrow(PrometheusTextError);
    expect(() => parseSampleLine(line)).toThrow(message);
  });

  it('names the failing line', () => {
    expect(() => sumSamples('# c\nok 1\n\nbad line here\n', new Set())).toThrow(/^line 4: /);
  });
});
