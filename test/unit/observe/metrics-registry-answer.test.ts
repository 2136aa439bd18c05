/**
 * A worker's registry as it sends it to the primary (metrics-cluster.ts registryAnswer(), its
 * histogram families as HistogramParts): through JSON, as node:cluster's IPC carries it, and made
 * into prom-client's JSON (histogramJson()), it is what getMetricsAsJSON() gives, at a fraction of
 * the size; summed alone by the primary (aggregate-in-turns.ts), it is the registry's own text.
 */
import { describe, expect, it } from 'vitest';
import { RequestContext } from '../../../src/http/request-context.js';
import { RouterMetrics } from '../../../src/observe/metrics.js';
import { registryAnswer, type SentMetric } from '../../../src/observe/metrics-cluster.js';
import { HistogramFamily, histogramJson, isHistogramParts } from '../../../src/observe/metrics-series.js';
import { aggregateInTurns } from '../../../src/observe/aggregate-in-turns.js';

const asJson = (sent: SentMetric[]) => sent.map((x) => (isHistogramParts(x) ? histogramJson(x) : x));

function metricsWithTraffic(routes: number): RouterMetrics {
  const m = new RouterMetrics({ defaultMetrics: false });
  const statuses = [200, 200, 429, 502];
  for (let i = 0; i < routes * 3; i++) {
    const c = new RequestContext('POST', '/v1/completions', 'HTTP/1.1', 'id', 1_000, 1_000);
    c.modelName = `model-${i % routes}`;
    c.modelRoute = `default/route-${i % routes}`;
    c.statusCode = statuses[i % statuses.length];
    if (c.statusCode !== 200) c.fail(c.statusCode === 429 ? 'rate_limit' : 'upstream_error', 'x', c.statusCode);
    c.inputTokens = 10 + i;
    c.outputTokens = 20 + i;
    c.tUpstreamStart = 1_001;
    c.tUpstreamEnd = 1_001 + ((i * 37) % 4_000);
    m.observeRequest(c, i % 3 === 0 ? null : (i * 13) % 900);
  }
  return m;
}

describe('a worker registry as sent to the primary', () => {
  it('comes back through JSON as getMetricsAsJSON() gives it, histograms included, in the same order', async () => {
    const m = metricsWithTraffic(40);
    const sent = await registryAnswer(m.registry);
    expect(sent.some((x) => 'series' in x)).toBe(true);
    const back = asJson(JSON.parse(JSON.stringify(sent)));
    expect(back).toEqual(JSON.parse(JSON.stringify(await m.registry.getMetricsAsJSON())));
    expect(back.map((x) => x.name)).toEqual(m.registry.getMetricsAsArray().map((x) => x.name));
  });

  it('summed alone by the primary, gives the registry\'s own exposition text', async () => {
    const m = metricsWithTraffic(40);
    const sent: SentMetric[] = JSON.parse(JSON.stringify(await registryAnswer(m.registry)));
    expect(await aggregateInTurns([sent])).toBe(await m.registry.metrics());
    expect(await aggregateInTurns([sent], { valuesPerTurn: 7 })).toBe(await m.registry.metrics());
  });

  it('reads every metric at once: what happens after the call (a configuration applied, a request counted) is in none of it', async () => {
    const m = metricsWithTraffic(5);
    const answer = registryAnswer(m.registry);
    // As a message emitted on the next tick would, after the call and before its promise settles.
    const c = new RequestContext('POST', '/v1/completions', 'HTTP/1.1', 'id', 1_000, 1_000);
    c.modelName = 'model-late';
    c.modelRoute = 'default/route-late';
    c.statusCode = 200;
    c.tUpstreamStart = 1_001;
    c.tUpstreamEnd = 1_002;
    m.observeRequest(c, 1);
    const text = JSON.stringify(await answer);
    expect(text).not.toContain('route-late');
    expect(JSON.stringify(await registryAnswer(m.registry))).toContain('route-late');
  });

  it('sends a histogram family as one entry a series: a fraction of the JSON', async () => {
    const m = metricsWithTraffic(200);
    const histograms = m.registry.getMetricsAsArray().filter((x) => (x as unknown) instanceof HistogramFamily).length;
    expect(histograms).toBeGreaterThan(0);
    const sent = JSON.stringify(await registryAnswer(m.registry)).length;
    const json = JSON.stringify(await m.registry.getMetricsAsJSON()).length;
    expect(sent).toBeLessThan(json / 4);
  });
});
