/**
 * Telemetry: the daemon's Prometheus metrics (and, later, its OpenTelemetry traces). Other
 * folders import only from here.
 */
export { createLoomMetrics } from './loom-metrics.ts';
export type { LoomMetrics, LoomMetricsSources, McpConnection } from './loom-metrics.ts';
