import { afterEach, describe, expect, it } from 'vitest';
import { OtlpExporter } from '../../../src/observe/otlp-exporter.js';
import { parseTraceSettings } from '../../../src/observe/trace-settings.js';
import { startOtlpCollector, type OtlpCollector } from '../../helpers/otlp-collector.js';
import { unusedPort } from '../../helpers/processes.js';

const span = (i: number): string =>
  `{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"${String(i).padStart(16, '0')}","name":"s${i}","kind":2,` +
  `"startTimeUnixNano":"1","endTimeUnixNano":"2","attributes":[],"status":{}}`;

/** Queues one span's JSON text as the tracer queues the bytes it writes: room reserved, the span written there, committed. */
function push(exporter: OtlpExporter, spanJson: string): void {
  const batch = exporter.reserve(3 * spanJson.length); // UTF-8 takes at most 3 bytes per UTF-16 unit
  if (batch !== null) exporter.commit(batch, batch.start + batch.buf.write(spanJson, batch.start, 'utf8'));
}

describe('OtlpExporter against a real HTTP collector', () => {
  let collector: OtlpCollector | null = null;
  let exporter: OtlpExporter | null = null;
  afterEach(async () => {
    await exporter?.close();
    await collector?.close();
    exporter = null;
    collector = null;
  });

  it('sends batches of at most the batch size, with the resource, and flushes the rest', async () => {
    collector = await startOtlpCollector();
    const s = parseTraceSettings({
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '4', OTEL_BSP_SCHEDULE_DELAY: '3600000',
      OTEL_SERVICE_NAME: 'unit', OTEL_EXPORTER_OTLP_HEADERS: 'x-tenant=t1',
    })!;
    exporter = new OtlpExporter(s, '1.2.3');
    for (let i = 1; i <= 10; i++) push(exporter, span(i));
    await exporter.flush();
    expect(collector.spans.map((x) => x.name)).toEqual(Array.from({ length: 10 }, (_, i) => `s${i + 1}`));
    expect(collector.requests()).toBe(3); // 4 + 4 + 2
    expect(collector.spans[0].resource).toEqual({ 'service.name': 'unit' });
    expect(exporter.exported).toBe(10);
    expect(exporter.droppedQueueFull + exporter.droppedExportFailed).toBe(0);
  });

  it('batches larger than a batch buffer starts with grow and arrive whole, in order', async () => {
    collector = await startOtlpCollector();
    const s = parseTraceSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '300', OTEL_BSP_SCHEDULE_DELAY: '3600000' })!;
    exporter = new OtlpExporter(s, '1.2.3');
    const padded = (i: number): string => span(i).replace(`"name":"s${i}"`, `"name":"s${i}","attributes":[{"key":"pad","value":{"stringValue":"${'x'.repeat(900)}é"}}]`).replace(',"attributes":[],', ',');
    for (let i = 1; i <= 750; i++) push(exporter, padded(i)); // 2 full batches of about 280 KB, then 150 spans
    await exporter.flush();
    expect(collector.requests()).toBe(3);
    expect(collector.spans.map((x) => x.name)).toEqual(Array.from({ length: 750 }, (_, i) => `s${i + 1}`));
    expect(collector.spans.every((x) => x.attrs.pad === `${'x'.repeat(900)}é`)).toBe(true);
    expect(exporter.exported).toBe(750);
    // The next spans fill the sent batches' buffers again: each arrives as written, none of the last.
    for (let i = 751; i <= 1000; i++) push(exporter, span(i));
    await exporter.flush();
    expect(collector.spans.slice(750).map((x) => x.name)).toEqual(Array.from({ length: 250 }, (_, i) => `s${i + 751}`));
    expect(collector.spans.slice(750).every((x) => x.attrs.pad === undefined)).toBe(true);
    expect(exporter.exported).toBe(1000);
  });

  it('drops and counts spans beyond the queue bound and spans of a failed export', async () => {
    const port = await unusedPort(); // nothing listens there
    const s = parseTraceSettings({
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`, OTEL_BSP_MAX_QUEUE_SIZE: '5', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '5',
      OTEL_BSP_SCHEDULE_DELAY: '3600000', OTEL_EXPORTER_OTLP_TIMEOUT: '2000',
    })!;
    exporter = new OtlpExporter(s, '1.2.3');
    for (let i = 1; i <= 4; i++) push(exporter, span(i));
    expect(exporter.queued).toBe(4);
    push(exporter, span(5)); // the batch is full: it leaves the queue for the (failing) export
    for (let i = 6; i <= 12; i++) push(exporter, span(i)); // 5 fit the queue again, 2 are dropped
    expect(exporter.droppedQueueFull).toBe(2);
    await exporter.flush();
    expect(exporter.droppedExportFailed).toBe(10);
    expect(exporter.exported).toBe(0);
  });

  it('logs failed exports at most once a minute, naming the endpoint without its query and the reason', async () => {
    collector = await startOtlpCollector();
    const u = new URL(collector.url);
    const s = parseTraceSettings({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `http://${u.host}/wrong/path?token=secret`, OTEL_BSP_SCHEDULE_DELAY: '3600000' })!;
    const logs: string[] = [];
    exporter = new OtlpExporter(s, '1', (_level, m) => logs.push(m));
    push(exporter, span(1));
    await exporter.flush();
    push(exporter, span(2));
    push(exporter, span(3));
    await exporter.flush();
    expect(exporter.droppedExportFailed).toBe(3);
    expect(logs).toEqual([`exporting spans to http://${u.host}/wrong/path failed (HTTP 404): 1 span(s) dropped since the last such line (at most one a minute)`]);
  });

  it('counts a batch the collector refuses as failed', async () => {
    collector = await startOtlpCollector();
    const s = parseTraceSettings({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${collector.url}/wrong/path`, OTEL_BSP_SCHEDULE_DELAY: '3600000' })!;
    exporter = new OtlpExporter(s, '1');
    push(exporter, span(1));
    await exporter.flush();
    expect(exporter.droppedExportFailed).toBe(1);
  });
});
