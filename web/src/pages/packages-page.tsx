import { useState } from 'preact/hooks';
import { API, runBinding } from '../api.ts';
import { Card, Empty, ErrorBox, PageHeader } from '../components.tsx';
import { errorText, formatCost, formatTime, formatTokens } from '../format.ts';
import { useApi } from '../hooks.ts';
import { href } from '../router.ts';
import { usePackageVersion } from '../store.ts';
import type { ActivityRunView, BindingView, PackageNotifyRecord, PackageTrigger, PackageView } from '../types.ts';

/** How many runs each package lists. */
const RUNS_SHOWN = 20;
/** How many owner notifications the page lists. */
const NOTICES_SHOWN = 5;

/**
 * A trigger in words, as the CLI says it: `schedule "0 7 * * 1-5"`, `heartbeat every 30m within
 * 08:00-18:00`, `on chief-of-staff.briefing.ready` (the namespaced sources), `manual`.
 */
export function describeTrigger(trigger: PackageTrigger, sources: readonly string[]): string {
  switch (trigger.type) {
    case 'schedule':
      return `schedule "${trigger.cron}"`;
    case 'heartbeat':
      return `heartbeat every ${trigger.interval}${trigger.window === undefined ? '' : ` within ${trigger.window}`}`;
    case 'event':
      return `on ${(sources.length > 0 ? sources : trigger.sources).join(', ')}`;
    case 'manual':
      return 'manual';
  }
}

/** A package's pricing in words (`per_run $0.50`), or undefined when it names none. */
export function describePricing(pricing: PackageView['pricing']): string | undefined {
  const parts = [pricing.model, pricing.cost === undefined ? undefined : formatCost(pricing.cost)].filter((part) => part !== undefined);
  return parts.length === 0 ? undefined : parts.join(' ');
}

/** Runs a manual binding; disabled while it runs, and shows what the API answered when it refuses (409 while still running, 403 for a viewer key). */
function RunButton({ slug, binding, onRan }: { slug: string; binding: BindingView; onRan: () => void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>(undefined);
  const running = busy || binding.running;
  const run = async (): Promise<void> => {
    setBusy(true);
    setError(undefined);
    try {
      await runBinding(slug, binding.name);
    } catch (cause) {
      setError(errorText(cause));
    } finally {
      setBusy(false);
      onRan();
    }
  };
  return (
    <span class="run-cell">
      <button type="button" class="btn btn-small" aria-label={`Run ${binding.name}`} disabled={running} onClick={() => void run()}>
        {running ? 'Running…' : 'Run'}
      </button>
      {error === undefined ? null : (
        <span class="small error-text" role="alert" data-testid="run-error">
          {error}
        </span>
      )}
    </span>
  );
}

function ActivityLine({ activity }: { activity: ActivityRunView }) {
  return (
    <div class="activity-line" data-testid="activity" data-activity={activity.id}>
      <span class="mono">{activity.id}</span> {activity.status}
      {activity.attempts > 1 ? ` (${activity.attempts} attempts)` : ''} · {formatTokens(activity.input_tokens + activity.output_tokens)} tokens ·{' '}
      {formatCost(activity.cost_usd)}
      {activity.error === null ? null : (
        <div class="error-text">
          {activity.fallback === null ? '' : `${activity.fallback}: `}
          {activity.error}
        </div>
      )}
    </div>
  );
}

function Runs({ slug, version }: { slug: string; version: string }) {
  const runs = useApi(API.packageRuns, { query: { package: slug, limit: RUNS_SHOWN } }, [version]);
  if (runs.error !== undefined) return <ErrorBox message={runs.error} />;
  if (runs.data === undefined) return null;
  if (runs.data.length === 0) return <p class="small muted">No runs yet.</p>;
  return (
    <table class="table" aria-label={`Runs of ${slug}`}>
      <thead>
        <tr>
          <th>Started</th>
          <th>Binding</th>
          <th>Trigger</th>
          <th>Status</th>
          <th>Activities</th>
          <th>Tokens</th>
          <th>Cost</th>
        </tr>
      </thead>
      <tbody>
        {runs.data.map((run) => (
          <tr key={run.id} data-testid="package-run" data-binding={run.binding} data-status={run.status}>
            <td class="small" title={run.ended_at === null ? 'still going' : `ended ${formatTime(run.ended_at)}`}>
              {formatTime(run.started_at)}
            </td>
            <td class="mono">{run.binding}</td>
            <td class="small">{run.trigger}</td>
            <td>
              <span class={`badge badge-${run.status}`}>{run.status}</span>
            </td>
            <td class="small">
              {/* Why it was aborted, skipped or missed. */}
              {run.error === null ? null : (
                <div class="run-reason" data-testid="run-reason">
                  {run.error}
                </div>
              )}
              {run.activities.map((activity) => (
                <ActivityLine key={activity.id} activity={activity} />
              ))}
              {run.activities.length === 0 && run.error === null ? '—' : null}
              {run.emitted === null ? null : <div class="muted">emitted {run.emitted}</div>}
            </td>
            <td>{formatTokens(run.input_tokens + run.output_tokens)}</td>
            <td>{formatCost(run.cost_usd)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function PackageCard({ pkg, version, onRan }: { pkg: PackageView; version: string; onRan: () => void }) {
  const pricing = describePricing(pkg.pricing);
  return (
    <Card
      title={
        <span data-testid="package" data-package={pkg.slug}>
          {pkg.qualified_name ?? pkg.slug} <span class="muted small">{pkg.version}</span>{' '}
          <span class={`badge badge-${pkg.active ? 'running' : 'suspended'}`}>{pkg.active ? 'active' : 'inactive'}</span>
        </span>
      }
    >
      <p class="small muted">
        agent <a href={href.agent(pkg.agent)}>{pkg.agent}</a> · installed {formatTime(pkg.installed_at)} from <span class="mono">{pkg.source}</span> · skills{' '}
        {pkg.skills.length === 0 ? 'none' : pkg.skills.join(', ')}
        {pkg.settings.length === 0 ? null : (
          <span>
            {' '}
            · settings <span class="mono">{pkg.settings.join(', ')}</span>
          </span>
        )}
      </p>
      {pricing === undefined ? null : <p class="small muted">pricing {pricing} (shown only; Loom charges nothing)</p>}
      <table class="table" aria-label={`Bindings of ${pkg.slug}`}>
        <thead>
          <tr>
            <th>Binding</th>
            <th>Trigger</th>
            <th>Next fire</th>
            <th>Emits</th>
            <th>Budget</th>
            <th>
              <span class="visually-hidden">Run</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {pkg.bindings.map((binding) => (
            <tr key={binding.name} data-testid="binding" data-binding={binding.name}>
              <td>
                <div class="mono strong">{binding.name}</div>
                <div class="small muted">{binding.description}</div>
              </td>
              <td class="small" data-testid="trigger">
                {describeTrigger(binding.trigger, binding.sources)}
              </td>
              <td class="small" data-testid="next-fire" title={binding.next_fire_at ?? ''}>
                {binding.next_fire_at === null ? '—' : formatTime(binding.next_fire_at)}
              </td>
              <td class="small mono">{binding.emit ?? '—'}</td>
              <td class="small">
                {formatTokens(binding.total_per_run)} tokens, {binding.cost_estimate}
              </td>
              <td>{binding.trigger.type === 'manual' ? <RunButton slug={pkg.slug} binding={binding} onRan={onRan} /> : null}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h3 class="section-title">Recent runs</h3>
      <Runs slug={pkg.slug} version={version} />
    </Card>
  );
}

/** The newest owner notifications (`package-notify`: an activity failed and its fallback is NotifyOwner), from the audit log. */
function Notifications({ version }: { version: string }) {
  // Newest first, straight from the log: however many there are, the latest are the ones shown.
  const notices = useApi<typeof API.audit, PackageNotifyRecord[]>(
    API.audit,
    { query: { type: 'package-notify', order: 'desc', limit: String(NOTICES_SHOWN) } },
    [version],
  );
  const newest = notices.data ?? [];
  if (newest.length === 0) return null;
  return (
    <section class="notice" role="status" aria-label="Owner notifications" data-testid="package-notices">
      <div class="strong">The owner was notified</div>
      {newest.map((record) => (
        <div key={record.seq} data-testid="package-notice">
          {formatTime(record.at)} · <span class="mono">{record.data.name ?? '?'}</span> / <span class="mono">{record.data.binding ?? '?'}</span>: activity{' '}
          <span class="mono">{record.data.activity ?? '?'}</span> failed: {record.data.error ?? ''}
        </div>
      ))}
    </section>
  );
}

/** `#/packages`: the installed packages, their bindings and recent runs, reloaded on each package event. */
export function PackagesPage() {
  // Reload on each package event, and after a Run click in case the event stream is down.
  const [clicks, setClicks] = useState(0);
  const version = `${usePackageVersion()}:${clicks}`;
  const packages = useApi(API.packages, {}, [version]);
  return (
    <div class="page">
      <PageHeader
        title="Packages"
        subtitle={
          <span>
            Agents that work on their own: bindings on schedules, heartbeats, events and by hand. Install with <code>loom package install</code>.
          </span>
        }
      />
      <Notifications version={version} />
      <ErrorBox message={packages.error} />
      {packages.data === undefined ? null : packages.data.length === 0 ? (
        <Empty>
          No packages installed. Try <code>loom package install examples/packages/data-pipeline</code>.
        </Empty>
      ) : (
        packages.data.map((pkg) => <PackageCard key={pkg.slug} pkg={pkg} version={version} onRan={() => setClicks((count) => count + 1)} />)
      )}
    </div>
  );
}
