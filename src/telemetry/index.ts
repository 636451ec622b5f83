/**
 * Telemetry: the daemon's Prometheus metrics and its OpenTelemetry traces. This index loads the
 * metrics and exporter libraries, which a daemon without telemetry never needs at boot, so most of
 * Loom imports past it (test/architecture/layering-rules.ts names each file): `spans.ts` to open
 * spans, `tracing-endpoint.ts`, and `tracing.ts` and `loom-metrics.ts` on first use.
 */
export { createLoomMetrics } from './loom-metrics.ts';
export type { LoomMetrics } from './loom-metrics.ts';
export { withSpan, withToolSpan, withTurnSpan } from './spans.ts';
export { startTracing } from './tracing.ts';
export type { Tracing, TracingOptions } from './tracing.ts';
