import { useState } from 'preact/hooks';
import { API, call } from '../api.ts';
import { Card, Empty, ErrorBox } from '../components.tsx';
import { errorText, formatTime } from '../format.ts';
import { useApi } from '../hooks.ts';

/** How many of an agent's wake-ups the panel shows. */
export const SCHEDULE_RUNS_SHOWN = 50;

/**
 * A continuous or periodic agent's scheduled wake-ups (decision 0046), newest first: each run,
 * caught up after a restart or skipped and why; "Wake now" forces one (`POST …/runs`).
 */
export function ScheduleRunsPanel({ name, version }: { name: string; version: number }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>(undefined);
  const runs = useApi(API.scheduleRuns, { params: { agent: name }, query: { limit: SCHEDULE_RUNS_SHOWN } }, [version]);

  const wakeNow = async (): Promise<void> => {
    setBusy(true);
    setError(undefined);
    try {
      await call(API.wakeAgent, { params: { agent: name } });
    } catch (failure) {
      setError(errorText(failure));
    } finally {
      setBusy(false);
      runs.reload();
    }
  };

  return (
    <Card
      title="Scheduled runs"
      actions={
        <button type="button" class="btn btn-small" disabled={busy} onClick={() => void wakeNow()}>
          {busy ? 'Waking…' : 'Wake now'}
        </button>
      }
    >
      <ErrorBox message={error ?? runs.error} />
      {runs.data === undefined ? null : runs.data.length === 0 ? (
        <Empty>No wake-ups yet.</Empty>
      ) : (
        <table class="table" aria-label={`Scheduled runs of ${name}`}>
          <thead>
            <tr>
              <th>Due</th>
              <th>Trigger</th>
              <th>Outcome</th>
              <th>Finished</th>
              <th>Why</th>
            </tr>
          </thead>
          <tbody>
            {runs.data.map((run) => (
              <tr key={run.id} data-testid="schedule-run" data-outcome={run.outcome} data-caught-up={String(run.caught_up)}>
                <td class="small">{formatTime(run.due_at)}</td>
                <td class="small mono">{run.trigger}</td>
                <td>
                  <span class={`badge badge-${run.outcome}`}>{run.outcome}</span>
                  {run.count > 1 ? <span class="small muted"> ×{run.count}</span> : null}
                  {run.caught_up ? <span class="small muted"> caught up</span> : null}
                </td>
                <td class="small">{run.finished_at === null ? <span class="muted">running</span> : formatTime(run.finished_at)}</td>
                <td class="small">{run.reason ?? <span class="muted">-</span>}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Card>
  );
}
