import { Hono } from 'hono';
import type { Config } from '../config/index.ts';
import type { Kernel } from '../kernel/index.ts';
import { createCostCatalog } from '../models/index.ts';
import { createLoomMetrics, type LoomMetrics, type McpConnection } from '../telemetry/index.ts';
import { type HttpEnv, kernelOf } from './http-context.ts';

/** What `GET /metrics` reads. */
export interface MetricsRoutesOptions {
  kernel: Kernel;
  config: Pick<Config, 'telemetry' | 'prices'>;
  /** The MCP servers' connections, when the daemon connects any. */
  mcp?: { servers(): readonly McpConnection[] } | undefined;
}

/**
 * `GET /metrics`: the daemon's metrics in Prometheus text format (docs/observability.md lists
 * them), for an owner's key, or for any client the daemon serves when `[telemetry].metrics_public`
 * is true. The metrics start counting when the routes are made (when the daemon starts).
 * Returns the routes and the metrics, whose `dispose` stops them counting.
 */
export function createMetricsRoutes(options: MetricsRoutesOptions): { routes: Hono<HttpEnv>; metrics: LoomMetrics } {
  const metrics = createLoomMetrics({ kernel: options.kernel, costs: createCostCatalog(options.config.prices), mcp: options.mcp });
  const routes = new Hono<HttpEnv>();
  routes.get('/metrics', async (c) => {
    // Public, every client the daemon serves reads them (the route is then public: no principal).
    if (!options.config.telemetry.metrics_public) kernelOf(c, options.kernel).require('read the metrics');
    return c.body(await metrics.text(), 200, { 'content-type': metrics.contentType });
  });
  return { routes, metrics };
}
