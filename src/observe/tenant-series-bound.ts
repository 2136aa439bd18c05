/**
 * The bound on inference_router_tenant_tokens_total's `tenant` label (docs/metrics.md). Tenants are
 * client-chosen names (API key names, JWT tenant claims), so the tenants with a series of their own
 * are the first `max` seen and the tokens of the rest are counted together under OVERFLOW_TENANT.
 *
 * Each worker keeps that bound for its own memory, but workers see tenants in different orders:
 * summed across N workers, up to N × max tenants had their own series. The primary applies the bound
 * again to the sum (TenantSeriesBound), over the first `max` tenants the instance reported.
 */
import { isHistogramParts, type MetricJson, type MetricValue } from './metrics-series.js';
import type { SentMetric } from './sent-metric.js';

export const TENANT_TOKENS = 'inference_router_tenant_tokens_total';
/** Tenants with their own series, by default (RouterMetricsOptions.maxTenants). */
export const DEFAULT_MAX_TENANTS = 100;
/**
 * The `tenant` of the tokens of tenants past the bound: empty, a name no tenant has (API key names
 * and JWT tenants are never empty: auth/auth-config.ts, auth/authenticator.ts), so a tenant named
 * "other" keeps its own series. Prometheus stores the series without a `tenant` label.
 */
export const OVERFLOW_TENANT = '';

/**
 * The instance-wide bound, applied to the workers' answers before they are summed. A tenant that has
 * its own series in one scrape has it in every later one, and one folded into the overflow stays
 * there, so no series goes down (the set of tenants with their own series only grows, to `max`).
 */
export class TenantSeriesBound {
  private readonly own = new Set<string>();

  constructor(private readonly max: number = DEFAULT_MAX_TENANTS) {}

  /** `lists` (workers' answers) with their tenant series past the bound under OVERFLOW_TENANT; the inputs are not changed. */
  apply(lists: readonly SentMetric[][]): SentMetric[][] {
    const tenants = (m: SentMetric): m is MetricJson => m.name === TENANT_TOKENS && !isHistogramParts(m);
    return lists.map((list) => (list.some(tenants) ? list.map((m) => (tenants(m) ? this.fold(m) : m)) : list));
  }

  private fold(m: MetricJson): MetricJson {
    let folded = false;
    const values: MetricValue[] = m.values.map((v) => {
      const tenant = v.labels.tenant;
      if (tenant === undefined || tenant === OVERFLOW_TENANT || this.own.has(tenant)) return v;
      if (this.own.size < this.max) {
        this.own.add(tenant);
        return v;
      }
      folded = true;
      return { ...v, labels: { ...v.labels, tenant: OVERFLOW_TENANT } };
    });
    // Values of one label set are summed by AggregatorRegistry.aggregate(), within an answer too.
    return folded ? { ...m, values } : m;
  }
}
