/**
 * Telemetry: the daemon's Prometheus metrics and its OpenTelemetry traces. Other folders import
 * only from here, but for the runtime, which imports `spans.ts` itself: this index loads the
 * metrics and exporter libraries, which a daemon without telemetry never needs at boot.
 */
export { createLoomMetrics } from './loom-metrics.ts';
export type { LoomMetrics, LoomMetricsSources, McpConnection } from './loom-metrics.ts';
export { capturesContent, spansEnabled, traceContextFields, withRemoteParent, withSpan, withToolSpan, withTurnSpan } from './spans.ts';
export type { ToolSpanAttributes, TraceCarrier, TurnSpanAttributes } from './spans.ts';
export { startTracing } from './tracing.ts';
export { tracingEndpoint } from './tracing-endpoint.ts';
export type { Tracing, TracingOptions } from './tracing.ts';
