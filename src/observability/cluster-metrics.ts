import { AggregatorRegistry, type Registry } from "prom-client";
import type { Logger } from "../platform/logger.js";
import { startMetricsServer, type MetricsServer } from "./metrics-server.js";

/**
 * In a service process under the supervisor (WORKERS > 1): answers the supervisor's requests for
 * this process's metrics over the cluster's IPC channel. AggregatorRegistry's constructor is what
 * subscribes a worker to those requests.
 */
export function shareMetricsWithSupervisor(registry: Registry): void {
  AggregatorRegistry.setRegistries([registry]);
  new AggregatorRegistry();
}

/**
 * The supervisor's metrics port: each scrape asks every service process for its metrics and
 * answers their sum (counters and histograms add up; gauges such as queue sizes add up too), so
 * one scrape sees the whole machine however connections were spread.
 */
export function startClusterMetricsServer(o: { host: string; port: number; token: string | null; logger: Logger }): Promise<MetricsServer> {
  const aggregator = new AggregatorRegistry();
  return startMetricsServer({
    ...o,
    render: async () => ({ body: await aggregator.clusterMetrics(), contentType: aggregator.contentType }),
  });
}
