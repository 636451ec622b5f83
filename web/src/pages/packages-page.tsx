import { useState } from 'preact/hooks';
import { runBinding } from '../api.ts';
import { Card, Empty, ErrorBox, PageHeader } from '../components.tsx';
import { errorText, formatCost, formatTime, formatTokens } from '../format.ts';
import { useApi } from '../hooks.ts';
import { href } from '../router.ts';
import { useEventLog, usePackageVersion } from '../store.ts';
import type { BindingView, PackageRunView, PackageTrigger, PackageView } from '../types.ts';

/** A trigger in words, as the CLI says it. */
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

function RunButton({ slug, binding, onRan }: { slug: string; binding: BindingView; onRan: () => void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>(undefined);
  return (
    <span class="run-cell">
      <button
        type="button"
        class="btn btn-small"
        aria-label={`Run ${binding.name}`}
        disabled={busy || binding.running}
        onClick={() => {
          setBusy(true);
          setError(undefined);
          runBinding(slug, binding.name).then(
            () => {
              setBusy(false);
              onRan();
            },
            (cause: unknown) => {
              setBusy(false);
              setError(errorText(cause));
            },
          );
        }}
      >
        {busy || binding.running ? 'Running…' : 'Run'}
      </button>
      {error === undefined ? null : (
        <span class="small error-text" role="alert">
          {error}
        </span>
      )}
    </span>
  );
}

function Runs({ slug, version }: { slug: string; version: string }) {
  const runs = useApi<PackageRunView[]>(`/api/packages/runs?package=${encodeURIComponent(slug)}&limit=20`, [version]);
  if (runs.error !== undefined) return <ErrorBox message={runs.error} />;
  const list = runs.data ?? [];
  if (list.length === 0) return <p class="small muted">No runs yet.</p>;
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
        {list.map((run) => (
          <tr key={run.id} data-testid="package-run" data-status={run.status}>
            <td class="small">{formatTime(run.started_at)}</td>
            <td class="mono">{run.binding}</td>
            <td class="small">{run.trigger}</td>
            <td>
              <span class={`badge badge-${run.status}`}>{run.status}</span>
            </td>
            <td class="small">
              {run.activities.length === 0
                ? (run.error ?? '—')
                : run.activities.map((activity) => (
                    <div key={activity.id} title={activity.error ?? ''}>
                      <span class="mono">{activity.id}</span> {activity.status}
                      {activity.attempts > 1 ? ` (${activity.attempts} attempts)` : ''} · {formatTokens(activity.input_tokens + activity.output_tokens)} tokens · {formatCost(activity.cost_usd)}
                    </div>
                  ))}
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
  const pricing = pkg.pricing.model === undefined && pkg.pricing.cost === undefined ? null : `${pkg.pricing.model ?? ''} ${pkg.pricing.cost === undefined ? '' : `$${pkg.pricing.cost}`}`.trim();
  return (
    <Card
      title={
        <span>
          {pkg.qualified_name ?? pkg.slug} <span class="muted small">{pkg.version}</span> <span class={`badge badge-${pkg.active ? 'running' : 'suspended'}`}>{pkg.active ? 'active' : 'inactive'}</span>
        </span>
      }
    >
      <p class="small muted">
        agent <a href={href.agent(pkg.agent)}>{pkg.agent}</a> · skills {pkg.skills.length === 0 ? 'none' : pkg.skills.join(', ')}
        {pricing === null ? null : ` · pricing ${pricing} (shown only; Loom charges nothing)`}
      </p>
      <table class="table" aria-label={`Bindings of ${pkg.slug}`}>
        <thead>
          <tr>
            <th>Binding</th>
            <th>Trigger</th>
            <th>Next fire</th>
            <th>Emits</th>
            <th>Budget</th>
            <th />
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
              <td class="small">{binding.next_fire_at === null ? '—' : formatTime(binding.next_fire_at)}</td>
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

/** Owner notifications (`NotifyOwner`) seen since the dashboard opened. */
function Notifications() {
  const { events } = useEventLog();
  const notices = events.filter((event) => event.type === 'package-notify').slice(0, 5);
  if (notices.length === 0) return null;
  return (
    <div class="error-box" role="alert" data-testid="package-notices">
      {notices.map((event) => (
        <div key={`${String(event['runId'])}:${String(event['activity'])}`}>
          {formatTime(event.at)} · <span class="mono">{event.name}</span> / {String(event['binding'])}: activity <span class="mono">{String(event['activity'])}</span> failed: {String(event['error'])}
        </div>
      ))}
    </div>
  );
}

export function PackagesPage() {
  const version = usePackageVersion();
  const packages = useApi<PackageView[]>('/api/packages', [version]);
  const list = packages.data ?? [];
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
      <Notifications />
      <ErrorBox message={packages.error} />
      {packages.data === undefined ? null : list.length === 0 ? (
        <Empty>No packages installed. Try: loom package install examples/packages/data-pipeline</Empty>
      ) : (
        list.map((pkg) => <PackageCard key={pkg.slug} pkg={pkg} version={version} onRan={packages.reload} />)
      )}
    </div>
  );
}
