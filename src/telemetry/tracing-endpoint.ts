/**
 * Where traces go: `[telemetry].otlp_endpoint`, else `OTEL_EXPORTER_OTLP_ENDPOINT`; undefined
 * (tracing off) when neither is set.
 */
export function tracingEndpoint(telemetry: { otlp_endpoint?: string | undefined }, env: Readonly<Record<string, string | undefined>>): string | undefined {
  const fromEnv = env['OTEL_EXPORTER_OTLP_ENDPOINT']?.trim();
  return telemetry.otlp_endpoint ?? (fromEnv === undefined || fromEnv === '' ? undefined : fromEnv);
}
