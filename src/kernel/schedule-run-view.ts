import type { ScheduleRunRecord } from '../contracts/index.ts';
import type { ScheduleRunView } from '../wire/index.ts';

export type { ScheduleRunView };

const iso = (at: number | null): string | null => (at === null ? null : new Date(at).toISOString());

/** The view of a stored run. */
export function toScheduleRunView(run: ScheduleRunRecord): ScheduleRunView {
  return {
    id: run.id,
    trigger: run.trigger,
    due_at: new Date(run.dueAt).toISOString(),
    started_at: iso(run.startedAt),
    finished_at: iso(run.finishedAt),
    outcome: run.outcome,
    reason: run.reason,
    caught_up: run.caughtUp,
    count: run.count,
  };
}
