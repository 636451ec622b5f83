import type { ScheduleRunOutcome, ScheduleRunRecord } from '../contracts/index.ts';

/** A scheduled wake-up of an agent as the API, the CLI and the dashboard show it (times in ISO 8601). */
export interface ScheduleRunView {
  id: string;
  /** `continuous`, `cron`, `manual` (forced now), or the proactive trigger's event. */
  trigger: string;
  due_at: string;
  started_at: string | null;
  finished_at: string | null;
  outcome: ScheduleRunOutcome;
  /** Why it was skipped, interrupted or failed. */
  reason: string | null;
  /** Due while the daemon was down, and run late (`[schedule].catch_up`). */
  caught_up: boolean;
  /** How many due instants it stands for (more than 1 for missed ones skipped together). */
  count: number;
}

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
