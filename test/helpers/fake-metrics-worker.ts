/**
 * A node:cluster worker as the primary's metrics side sees it (metrics-cluster.ts MetricsCluster):
 * records what the primary sends it and reports each send as done. `connected` false: its
 * channel closed (isConnected() false).
 */
export class FakeWorker {
  sent: any[] = [];
  connected = true;
  isConnected(): boolean {
    return this.connected;
  }
  send(m: unknown, _h: unknown, cb?: (err: Error | null) => void): boolean {
    this.sent.push(m);
    cb?.(null);
    return true;
  }
}
