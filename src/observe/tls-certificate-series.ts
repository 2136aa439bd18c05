/**
 * The primary's own series when the router serves HTTPS (ROUTER_TLS_CERT_FILE): when the
 * certificate the workers serve expires. The primary checks and rotates the certificate
 * (primary/tls-rotation.ts), so it adds this to the scrape's sum once (metrics-cluster.ts, `ownSeries`).
 */
import type { MetricJson } from './metrics-series.js';

export const TLS_CERTIFICATE_EXPIRY = 'inference_router_tls_certificate_expiry_seconds';

/** `notAfter`: the served certificate's end of validity. */
export function tlsCertificateSeries(notAfter: Date): MetricJson[] {
  return [{
    name: TLS_CERTIFICATE_EXPIRY,
    help: 'When the certificate the router serves HTTPS with expires (its notAfter), in seconds since the Unix epoch; follows a rotation once every worker serves the new certificate.',
    type: 'gauge',
    values: [{ labels: {}, value: Math.floor(notAfter.getTime() / 1000) }],
    aggregator: 'max',
  }];
}
