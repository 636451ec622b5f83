import { Hono } from 'hono';
import type { Kernel } from '../kernel/index.ts';
import type { LoomMetrics } from '../telemetry/index.ts';
import { type HttpEnv, kernelOf } from './http-context.ts';

/** What `GET /metrics` serves. */
export interface MetricsRoutesOptions {
  kernel: Kernel;
  /** The daemon's metrics, made (and disposed of) by whoever runs the daemon. */
  metrics: LoomMetrics;
  /** `[telemetry].metrics_public`: any client the daemon serves may read them. */
  metricsPublic: boolean;
}

/**
 * `GET /metrics`: the daemon's metrics in Prometheus text format (docs/observability.md lists
 * them), for an owner's key, or for any client the daemon serves when `[telemetry].metrics_public`
 * is true.
 */
export function createMetricsRoutes(options: MetricsRoutesOptions): Hono<HttpEnv> {
  const { metrics } = options;
  const routes = new Hono<HttpEnv>();
  routes.get('/metrics', async (c) => {
    // Public, every client the daemon serves reads them (the route is then public: no principal).
    if (!options.metricsPublic) kernelOf(c, options.kernel).require('read the metrics');
    return c.body(await metrics.text(), 200, { 'content-type': metrics.contentType });
  });
  return routes;
}
