import type { InstalledPackageRecord, JsonObject, JsonValue, PackageRunRecord } from '../contracts/index.ts';
import type { ActivityRunView, BindingView, PackageRunView as WirePackageRunView, PackageView } from '../wire/index.ts';
import type { BindingView as RuntimeBindingView, PackageRuntime } from './package-runtime.ts';

export type { ActivityRunView, PackageView };

/** A binding as the API, `loom package show --json` and the dashboard show it (src/wire's `BindingView`). */
export type BindingWireView = BindingView;

/** A run of a binding, with each activity's status, tokens and cost: src/wire's `PackageRunView`, its inputs JSON. */
export interface PackageRunView extends Omit<WirePackageRunView, 'inputs'> {
  inputs: JsonObject;
}

/** A package's `[pricing]` as its view shows it: the model and cost it names, if any. */
type PackagePricing = PackageView['pricing'];

/** The pricing stored with a package (validated at install): its `model` and `cost` when they are a string and a number. */
function pricingOf(stored: JsonValue | undefined): PackagePricing {
  if (typeof stored !== 'object' || stored === null || Array.isArray(stored)) return {};
  const { model, cost } = stored;
  return { ...(typeof model === 'string' ? { model } : {}), ...(typeof cost === 'number' ? { cost } : {}) };
}

const iso = (at: number | null): string | null => (at === null ? null : new Date(at).toISOString());

/** The wire view of a binding. */
export function toBindingWireView(binding: RuntimeBindingView): BindingWireView {
  return {
    name: binding.name,
    description: binding.description,
    trigger: binding.trigger,
    next_fire_at: iso(binding.nextFireAt),
    emit: binding.emit,
    sources: binding.sources,
    cost_estimate: binding.costEstimate,
    total_per_run: binding.totalPerRun,
    running: binding.running,
  };
}

/** The wire view of an installed package, its bindings' next fire times included. */
export async function toPackageView(record: InstalledPackageRecord, runtime: Pick<PackageRuntime, 'bindings' | 'isActive'>): Promise<PackageView> {
  const skills = record.agentJson['skills'];
  return {
    slug: record.slug,
    qualified_name: record.qualifiedName,
    version: record.version,
    agent: record.slug,
    agent_id: record.agentId,
    source: record.source,
    installed_at: new Date(record.installedAt).toISOString(),
    active: runtime.isActive(record.slug),
    settings: record.settings,
    pricing: pricingOf(record.agentJson['pricing']),
    skills: Array.isArray(skills) ? skills.filter((skill): skill is string => typeof skill === 'string') : [],
    bindings: (await runtime.bindings(record.slug)).map(toBindingWireView),
  };
}

/** The wire view of a run. */
export function toPackageRunView(run: PackageRunRecord): PackageRunView {
  const sum = (pick: (activity: PackageRunRecord['activities'][number]) => number): number =>
    run.activities.reduce((total, activity) => total + pick(activity), 0);
  return {
    id: run.id,
    package: run.package,
    binding: run.binding,
    trigger: run.trigger,
    status: run.status,
    inputs: run.inputs,
    emitted: run.emitted,
    error: run.error,
    started_at: new Date(run.startedAt).toISOString(),
    ended_at: iso(run.endedAt),
    input_tokens: sum((activity) => activity.inputTokens),
    output_tokens: sum((activity) => activity.outputTokens),
    cost_usd: sum((activity) => activity.costUsd),
    activities: run.activities.map((activity) => ({
      id: activity.id,
      status: activity.status,
      attempts: activity.attempts,
      input_tokens: activity.inputTokens,
      output_tokens: activity.outputTokens,
      cost_usd: activity.costUsd,
      output: activity.output,
      error: activity.error,
      fallback: activity.fallback,
      started_at: iso(activity.startedAt),
      ended_at: iso(activity.endedAt),
    })),
  };
}
