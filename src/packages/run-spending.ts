import type { ActivityRunRecord, PackageRunRecord, PackageRunRepository } from '../contracts/index.ts';
import { QuotaExceededError, TokenBudgetExceededError } from '../errors/index.ts';
import type { Kernel, TaskTurn } from '../kernel/index.ts';
import type { RunEvent, RunnableBinding } from './run-binding.ts';

/** Tokens and cost. */
interface Spent {
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
}

/** What the run's parts go through, so every attempt's spending counts (see {@link meterRun}). */
export interface MeteredRun {
  /** Runs an activity's attempt within what is left of `total_per_run`, counting what each of its model calls spent. */
  kernel: Pick<Kernel, 'runTask'>;
  /** The run's records, with what attempts spent and the run's own count missed added to each activity. */
  runs: PackageRunRepository;
  /** The run's events, their records completed the same way. */
  report: (event: RunEvent) => RunEvent;
  /** A run record completed the same way. */
  complete: (run: PackageRunRecord) => PackageRunRecord;
  /** Tokens the run has spent, every attempt of every activity counted (a resumed run's earlier ones too). */
  spent(): number;
  /** Aborts the run when its agent's hourly quota refused an attempt, with that refusal: nothing runs until the hour frees. */
  readonly stopped: AbortSignal;
}

/** What {@link meterRun} meters: the binding to run, the kernel and run records it goes through, and the run it resumes. */
export interface MeterRunOptions {
  binding: RunnableBinding;
  kernel: Pick<Kernel, 'runTask'>;
  runs: PackageRunRepository;
  /** A run cut off earlier: what its attempts spent counts already. */
  resume: PackageRunRecord | undefined;
}

const sumOf = (activities: readonly ActivityRunRecord[]): number =>
  activities.reduce((total, activity) => total + activity.inputTokens + activity.outputTokens, 0);

/**
 * Meters a package run (spec/04 `budget.total_per_run`) through the kernel's budget ledger: each
 * activity's attempt is a task turn whose model calls report what they spent, failed calls and
 * failed attempts included, so every attempt counts against the run's `total_per_run`; an attempt
 * runs within what is left of it (each of its model calls refused once nothing is), and one the
 * budget cannot cover (nothing left) is not started: it fails with a `TokenBudgetExceededError`,
 * which is not retried. What an attempt spent beyond what `runBinding` counts from its outcome (a
 * failed attempt's calls, a step's `generate_text`) is added to its activity in every record
 * written and reported, so the run's record shows all it spent. A refusal by the agent's hourly
 * quota aborts `stopped` (retries would only be refused too).
 */
export function meterRun(options: MeterRunOptions): MeteredRun {
  const { binding, kernel, runs, resume } = options;
  let spent = resume === undefined ? 0 : sumOf(resume.activities);
  /** The activity whose attempt runs now (told by `activity-start`). */
  let current: string | undefined;
  /** Per activity: what its attempts spent that `runBinding` did not count. */
  const missed = new Map<string, Spent>();
  const stop = new AbortController();

  const completeActivity = (activity: ActivityRunRecord): ActivityRunRecord => {
    const extra = missed.get(activity.id);
    return extra === undefined
      ? activity
      : {
          ...activity,
          inputTokens: activity.inputTokens + extra.inputTokens,
          outputTokens: activity.outputTokens + extra.outputTokens,
          costUsd: activity.costUsd + extra.costUsd,
        };
  };
  const complete = (run: PackageRunRecord): PackageRunRecord => (missed.size === 0 ? run : { ...run, activities: run.activities.map(completeActivity) });

  const miss = (activity: string | undefined, attempt: Spent, counted: Spent): void => {
    if (activity === undefined) return;
    const extra = {
      inputTokens: attempt.inputTokens - counted.inputTokens,
      outputTokens: attempt.outputTokens - counted.outputTokens,
      costUsd: attempt.costUsd - counted.costUsd,
    };
    if (extra.inputTokens <= 0 && extra.outputTokens <= 0 && extra.costUsd <= 0) return;
    const before = missed.get(activity) ?? { inputTokens: 0, outputTokens: 0, costUsd: 0 };
    missed.set(activity, {
      inputTokens: before.inputTokens + Math.max(0, extra.inputTokens),
      outputTokens: before.outputTokens + Math.max(0, extra.outputTokens),
      costUsd: before.costUsd + Math.max(0, extra.costUsd),
    });
  };

  const totalLabel = `binding "${binding.name}" (budget.total_per_run = ${binding.totalPerRun})`;

  async function runTask(...[reference, task, options]: Parameters<Kernel['runTask']>): ReturnType<Kernel['runTask']> {
    const activity = current;
    const left = binding.totalPerRun - spent;
    if (left <= 0) {
      throw new TokenBudgetExceededError(
        `not started: ${totalLabel} is spent, ${spent} tokens used by the run's attempts; raise total_per_run to let it go further`,
        {
          details: { max: binding.totalPerRun, used: spent, inputTokens: 0, outputTokens: 0 },
        },
      );
    }
    const attempt: Spent = { inputTokens: 0, outputTokens: 0, costUsd: 0 };
    const own = task.tokenBudget;
    const metered: TaskTurn = {
      ...task,
      // What is left of the run, when it is less than what the attempt was given.
      tokenBudget:
        own === undefined || left < own.max
          ? { max: left, label: `binding "${binding.name}" (budget.total_per_run = ${binding.totalPerRun}, ${left} left)` }
          : own,
      onSpend: (call) => {
        attempt.inputTokens += call.inputTokens;
        attempt.outputTokens += call.outputTokens;
        attempt.costUsd += call.costUsd;
        spent += call.inputTokens + call.outputTokens;
        task.onSpend?.(call);
      },
    };
    try {
      const result = await kernel.runTask(reference, metered, options);
      miss(activity, attempt, { ...result.usage, costUsd: result.costUsd });
      return result;
    } catch (error) {
      // `runBinding` counts a budget stop's details and nothing of any other failure.
      const details = error instanceof TokenBudgetExceededError ? error.details : {};
      const tokens = (key: string): number => (typeof details[key] === 'number' ? details[key] : 0);
      miss(activity, attempt, { inputTokens: tokens('inputTokens'), outputTokens: tokens('outputTokens'), costUsd: 0 });
      if (error instanceof QuotaExceededError) stop.abort(error);
      throw error;
    }
  }

  return {
    kernel: { runTask },
    runs: {
      create: (run) => runs.create(complete(run)),
      start: (run) => runs.start(complete(run)),
      update: (run) => runs.update(complete(run)),
      get: (id) => runs.get(id),
      list: (query) => runs.list(query),
      interruptRunning: (at, error) => runs.interruptRunning(at, error),
      lastCheckHash: (pkg, binding) => runs.lastCheckHash(pkg, binding),
    },
    report(event) {
      if (event.type === 'activity-start') current = event.activity;
      const run = complete(event.run);
      return event.type === 'activity-finish' || event.type === 'notify-owner'
        ? { ...event, run, activity: completeActivity(event.activity) }
        : { ...event, run };
    },
    complete,
    spent: () => spent,
    stopped: stop.signal,
  };
}
