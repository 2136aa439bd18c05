import { describe, expect, it } from 'vitest';
import { parseTraceSettings } from '../../../src/observe/trace-settings.js';

describe('parseTraceSettings', () => {
  it('is off unless asked for', () => {
    expect(parseTraceSettings({})).toBeNull();
    expect(parseTraceSettings({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' })).toBeNull();
    expect(parseTraceSettings({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })).toBeNull();
    expect(parseTraceSettings({ OTEL_SDK_DISABLED: 'true', OTEL_TRACES_EXPORTER: 'otlp' })).toBeNull();
    // The OpenTelemetry specification reads booleans in any case.
    expect(parseTraceSettings({ OTEL_SDK_DISABLED: 'TRUE', OTEL_TRACES_EXPORTER: 'otlp' })).toBeNull();
    expect(parseTraceSettings({ OTEL_SDK_DISABLED: 'False', OTEL_TRACES_EXPORTER: 'otlp' })).not.toBeNull();
  });

  it('defaults when OTEL_TRACES_EXPORTER=otlp', () => {
    const s = parseTraceSettings({ OTEL_TRACES_EXPORTER: 'otlp' })!;
    expect(s).toEqual({
      endpoint: 'http://localhost:4318/v1/traces', headers: [], serviceName: 'inference-router',
      resource: [['service.name', 'inference-router']], sampler: 'parentbased_always_on', ratio: 1,
      maxQueueSize: 2048, maxBatchSize: 512, scheduleDelayMs: 5000, timeoutMs: 10_000, compression: 'none', tls: null,
    });
    expect(Object.isFrozen(s)).toBe(true);
  });

  it('an endpoint variable alone turns it on; the traces endpoint is used as given', () => {
    expect(parseTraceSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://collector:4318/' })!.endpoint).toBe('https://collector:4318/v1/traces');
    expect(parseTraceSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/otlp' })!.endpoint).toBe('http://c:4318/otlp/v1/traces');
    expect(parseTraceSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:1', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b:2/custom' })!.endpoint)
      .toBe('http://b:2/custom');
  });

  it('reads service name, resource attributes, headers, sampler, batch settings', () => {
    const s = parseTraceSettings({
      OTEL_TRACES_EXPORTER: 'otlp', OTEL_RESOURCE_ATTRIBUTES: 'service.name=from-res,deployment.environment=prod,team=a%20b',
      OTEL_EXPORTER_OTLP_HEADERS: 'Authorization=Bearer%20t,x-scope=1', OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25', OTEL_BSP_MAX_QUEUE_SIZE: '100', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '10',
      OTEL_BSP_SCHEDULE_DELAY: '200', OTEL_EXPORTER_OTLP_TIMEOUT: '3000', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    })!;
    expect(s.serviceName).toBe('from-res');
    expect(s.resource).toEqual([['service.name', 'from-res'], ['deployment.environment', 'prod'], ['team', 'a b']]);
    expect(s.headers).toEqual(['authorization', 'Bearer t', 'x-scope', '1']);
    expect(s).toMatchObject({ sampler: 'parentbased_traceidratio', ratio: 0.25, maxQueueSize: 100, maxBatchSize: 10, scheduleDelayMs: 200, timeoutMs: 3000 });
    expect(parseTraceSettings({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_SERVICE_NAME: 'svc', OTEL_RESOURCE_ATTRIBUTES: 'service.name=r' })!.serviceName).toBe('svc');
    expect(parseTraceSettings({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_HEADERS: 'a=1', OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'b=2' })!.headers).toEqual(['b', '2']);
    expect(parseTraceSettings({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_COMPRESSION: 'gzip' })!.compression).toBe('gzip');
    expect(parseTraceSettings({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_COMPRESSION: 'gzip', OTEL_EXPORTER_OTLP_TRACES_COMPRESSION: 'none' })!.compression).toBe('none');
  });

  it.each([
    [{ OTEL_SDK_DISABLED: 'yes' }, 'OTEL_SDK_DISABLED: expected true or false; got "yes"'],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_COMPRESSION: 'deflate' }, 'OTEL_EXPORTER_OTLP_COMPRESSION: expected gzip or none; got "deflate"'],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_COMPRESSION: 'gzip', OTEL_EXPORTER_OTLP_TRACES_COMPRESSION: 'zstd' }, 'OTEL_EXPORTER_OTLP_TRACES_COMPRESSION: expected gzip or none; got "zstd"'],
    [{ OTEL_TRACES_EXPORTER: 'jaeger' }, 'OTEL_TRACES_EXPORTER: expected otlp or none (the router has no other exporter); got "jaeger"'],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' }, 'OTEL_EXPORTER_OTLP_PROTOCOL: expected http/json (the router exports OTLP/HTTP with JSON encoding); got "http/protobuf"'],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc' }, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, 'OTEL_EXPORTER_OTLP_ENDPOINT: expected an http:// or https:// URL; got "collector:4318"'],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'ftp://c/x' }, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://user:s3cret@collector:4318' }, 'OTEL_EXPORTER_OTLP_ENDPOINT must not hold a user or password'],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://user@collector/v1/traces' }, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must not hold a user or password'],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'sometimes' }, 'OTEL_TRACES_SAMPLER: expected always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio; got "sometimes"'],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '2' }, 'OTEL_TRACES_SAMPLER_ARG: expected a ratio from 0 to 1; got "2"'],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_BSP_MAX_QUEUE_SIZE: '0' }, 'OTEL_BSP_MAX_QUEUE_SIZE: expected an integer from 1 to 1000000; got "0"'],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_BSP_MAX_QUEUE_SIZE: '10', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '20' }, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE'],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_BSP_SCHEDULE_DELAY: '5s' }, 'OTEL_BSP_SCHEDULE_DELAY'],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: '-1' }, 'OTEL_EXPORTER_OTLP_TRACES_TIMEOUT'],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_RESOURCE_ATTRIBUTES: 'novalue' }, 'OTEL_RESOURCE_ATTRIBUTES: expected a list of key=value pairs separated by commas; got "novalue"'],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_HEADERS: 'a=%zz' }, 'OTEL_EXPORTER_OTLP_HEADERS'],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=abc%0Adef' }, 'OTEL_EXPORTER_OTLP_HEADERS: the value of x-api-key is not a valid HTTP header value'],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=abc%01def' }, 'OTEL_EXPORTER_OTLP_HEADERS: the value of x-api-key is not a valid HTTP header value'],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-api-key=%E2%82%AC' }, 'OTEL_EXPORTER_OTLP_TRACES_HEADERS: the value of x-api-key'],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_HEADERS: 'api key=1' }, 'OTEL_EXPORTER_OTLP_HEADERS: "api key" is not a valid HTTP header name'],
  ])('rejects %j naming %s', (env, name) => {
    expect(() => parseTraceSettings(env as NodeJS.ProcessEnv)).toThrow(name);
  });
});
