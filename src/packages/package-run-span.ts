import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import type { PackageRunRecord } from '../contracts/index.ts';
// The light half of the telemetry module: the SDK loads only when tracing starts.
import { withSpan } from '../telemetry/spans.ts';

/** Which binding a run is of, and what fired it. */
export interface PackageRunSpan {
  package: string;
  binding: string;
  trigger: string;
}

/**
 * Runs a package binding's run inside a `package_run {package}/{binding}` span, the parent of
 * its activities' model and tool calls: `loom.package.name`, `loom.package.binding`,
 * `loom.package.trigger`, and once it ends `loom.package.run.id` and `loom.package.run.status`
 * (a run aborted or interrupted sets the span's error status). With tracing off, `run()`.
 */
export function withPackageRunSpan(what: PackageRunSpan, run: () => Promise<PackageRunRecord>): Promise<PackageRunRecord> {
  const attributes = { 'loom.package.name': what.package, 'loom.package.binding': what.binding, 'loom.package.trigger': what.trigger };
  return withSpan(`package_run ${what.package}/${what.binding}`, SpanKind.INTERNAL, attributes, run, (span, finished) => {
    span.setAttributes({ 'loom.package.run.id': finished.id, 'loom.package.run.status': finished.status });
    if (finished.status === 'aborted' || finished.status === 'interrupted') {
      span.setAttribute('error.type', `run_${finished.status}`);
      span.setStatus({ code: SpanStatusCode.ERROR, message: finished.error ?? finished.status });
    }
  });
}
