import type { ActivityRunRecord, Capability, Clock, IdGenerator, JsonObject, Logger, PackageRunRecord, PackageRunRepository } from '../contracts/index.ts';
import { messageOf, TokenBudgetExceededError } from '../errors/index.ts';
import type { Kernel, TaskTurn } from '../kernel/index.ts';
import type { ModelTarget } from '../models/index.ts';

/** What an activity does when it still fails after its retries (spec/04 `on_error.fallback`). */
export type ActivityFallback = 'NotifyOwner' | 'Skip' | 'Abort';

/** One activity as the runtime runs it: the package's words, resolved. */
export interface RunnableActivity {
  id: string;
  intent: string;
  steps: readonly string[];
  /** The activity's model, its alias resolved. */
  model: ModelTarget;
  /** `token_budget.max`: input + output tokens of the activity's model calls. */
  tokenBudget: number;
  retry: number;
  fallback: ActivityFallback;
  /** The activity's skills' instructions, added to the system prompt. */
  instructions?: string | undefined;
  /** Least privilege: what its own `mcps`, `cmds` and skills name. */
  limit: readonly Capability[];
  /** Its own `mcps`: the only servers whose tools it may call (their names' patterns may match others'). */
  mcpServers: readonly string[];
}

/** A binding ready to run. */
export interface RunnableBinding {
  /** The package slug, also its agent's name. */
  package: string;
  name: string;
  inputs: JsonObject;
  activities: readonly RunnableActivity[];
  /** `budget.total_per_run`: tokens of the whole run. */
  totalPerRun: number;
  /** `emit`, not yet namespaced. */
  emit?: string | undefined;
}

/** What a run reports as it goes (the package runtime turns these into kernel events). */
export type RunEvent =
  | { type: 'run-start'; run: PackageRunRecord }
  | { type: 'activity-start'; run: PackageRunRecord; activity: string; attempt: number }
  | { type: 'activity-finish'; run: PackageRunRecord; activity: ActivityRunRecord }
  | { type: 'notify-owner'; run: PackageRunRecord; activity: ActivityRunRecord }
  | { type: 'emit'; run: PackageRunRecord; event: string };

/** What running a binding needs. */
export interface BindingRunParts {
  kernel: Pick<Kernel, 'runTask'>;
  runs: PackageRunRepository;
  clock: Clock;
  logger: Logger;
  report: (event: RunEvent) => void;
}

/** What the record of a run about to start needs. */
export interface RunStartParts {
  clock: Clock;
  ids: IdGenerator;
  /** The node that runs it (recorded on the run; a resumed run becomes this node's). Null outside a cluster's daemon. */
  nodeId: string | null;
}

/** The namespaced name of an event a package emits: `briefing.ready` in `chief-of-staff` is `chief-of-staff.briefing.ready`. */
export function namespacedEvent(slug: string, event: string): string {
  return `${slug}.${event}`;
}

/**
 * The prompt of one activity (spec/04): its intent, its steps, the binding's inputs and what
 * the activities before it produced. AGENT.md and the skills go in the system prompt instead.
 */
export function activityPrompt(
  activity: Pick<RunnableActivity, 'intent' | 'steps'>,
  inputs: JsonObject,
  earlier: readonly { id: string; output: string }[],
): string {
  const parts = [`Your task: ${activity.intent}`];
  if (activity.steps.length > 0) parts.push(`Steps:\n${activity.steps.map((step, index) => `${index + 1}. ${step}`).join('\n')}`);
  if (Object.keys(inputs).length > 0) parts.push(`Inputs:\n${JSON.stringify(inputs, null, 2)}`);
  for (const previous of earlier) parts.push(`Output of the earlier activity "${previous.id}":\n${previous.output}`);
  return parts.join('\n\n');
}

const pendingActivity = (id: string): ActivityRunRecord => ({
  id,
  status: 'pending',
  attempts: 0,
  inputTokens: 0,
  outputTokens: 0,
  costUsd: 0,
  output: null,
  error: null,
  fallback: null,
  startedAt: null,
  endedAt: null,
});

/**
 * The record a run of `binding` starts with, to store with `PackageRunRepository.start` (which
 * refuses it while another node runs the binding) before {@link runBinding} runs it: a new run,
 * its activities pending, named `runId` (a job's runs are named by the job, so a job run again
 * finds its run) or a drawn id; or, with `resume`, the run cut off going on, as this node's.
 */
export function runToStart(
  binding: RunnableBinding,
  trigger: string,
  parts: RunStartParts,
  options: { resume?: PackageRunRecord | undefined; runId?: string | undefined } = {},
): PackageRunRecord {
  if (options.resume !== undefined) return { ...options.resume, status: 'running', endedAt: null, error: null, nodeId: parts.nodeId };
  return {
    id: options.runId ?? parts.ids.uuid(),
    package: binding.package,
    binding: binding.name,
    trigger,
    status: 'running',
    inputs: binding.inputs,
    activities: binding.activities.map((activity) => pendingActivity(activity.id)),
    emitted: null,
    error: null,
    startedAt: parts.clock.now(),
    endedAt: null,
    nodeId: parts.nodeId,
  };
}

/**
 * Runs a binding's run (spec/04 "AgentWorker Runtime"), started already (see {@link runToStart}):
 * its activities in order, each a task turn of the package's agent on the activity's model,
 * limited to what the activity names, within the smaller of its `token_budget.max` and what is
 * left of the run's `total_per_run`. A failed activity is retried `retry` times (a budget overrun
 * is not retried: it would overrun again), then its fallback applies: `Skip` and `NotifyOwner`
 * (which also notifies the owner) go on to the next activity, `Abort` ends the run. The run emits
 * its event unless it was aborted. Every change is stored before it is reported. Activities a run
 * resumed had completed are not run again.
 */
export async function runBinding(
  binding: RunnableBinding,
  started: PackageRunRecord,
  parts: BindingRunParts,
  options: { signal?: AbortSignal } = {},
): Promise<PackageRunRecord> {
  const { kernel, runs, clock } = parts;
  let run = started;
  parts.report({ type: 'run-start', run });

  const save = async (changes: Partial<PackageRunRecord>): Promise<void> => {
    run = { ...run, ...changes };
    await runs.update(run);
  };
  const setActivity = async (record: ActivityRunRecord): Promise<void> => {
    await save({ activities: run.activities.map((entry) => (entry.id === record.id ? record : entry)) });
  };
  const used = (): number => run.activities.reduce((total, entry) => total + entry.inputTokens + entry.outputTokens, 0);

  let aborted = false;
  for (const activity of binding.activities) {
    const stored = run.activities.find((entry) => entry.id === activity.id) ?? pendingActivity(activity.id);
    // Finished ones are kept; one cut off by an interruption (failed, no fallback applied) runs again.
    if (stored.status === 'completed' || stored.status === 'skipped' || (stored.status === 'failed' && stored.fallback !== null)) continue;
    let record: ActivityRunRecord = { ...stored, status: 'running', startedAt: clock.now(), error: null };
    const earlier = run.activities.flatMap((entry) => (entry.status === 'completed' && entry.output !== null ? [{ id: entry.id, output: entry.output }] : []));
    for (;;) {
      options.signal?.throwIfAborted();
      record = { ...record, attempts: record.attempts + 1 };
      await setActivity(record);
      parts.report({ type: 'activity-start', run, activity: activity.id, attempt: record.attempts });
      const left = binding.totalPerRun - used();
      const runBudgetBinds = left < activity.tokenBudget;
      const task: TaskTurn = {
        prompt: activityPrompt(activity, binding.inputs, earlier),
        model: activity.model,
        limit: activity.limit,
        mcpServers: activity.mcpServers,
        tokenBudget: {
          max: Math.max(0, Math.min(activity.tokenBudget, left)),
          label: runBudgetBinds
            ? `binding "${binding.name}" (budget.total_per_run = ${binding.totalPerRun}, ${left} left)`
            : `activity "${activity.id}" (token_budget.max = ${activity.tokenBudget})`,
        },
        ...(activity.instructions === undefined ? {} : { instructions: activity.instructions }),
      };
      try {
        if (left <= 0)
          throw new TokenBudgetExceededError(`stopped: binding "${binding.name}" (budget.total_per_run = ${binding.totalPerRun}) has no tokens left`);
        const result = await kernel.runTask(binding.package, task, options.signal === undefined ? {} : { signal: options.signal });
        record = {
          ...record,
          status: 'completed',
          inputTokens: record.inputTokens + result.usage.inputTokens,
          outputTokens: record.outputTokens + result.usage.outputTokens,
          costUsd: record.costUsd + result.costUsd,
          output: result.text,
          endedAt: clock.now(),
        };
        break;
      } catch (error) {
        if (options.signal?.aborted === true) throw error;
        // A budget stop says what it spent (the kernel recorded it as usage too).
        const spent = error instanceof TokenBudgetExceededError ? error.details : {};
        const tokens = (key: string): number => (typeof spent[key] === 'number' ? spent[key] : 0);
        record = {
          ...record,
          error: messageOf(error),
          inputTokens: record.inputTokens + tokens('inputTokens'),
          outputTokens: record.outputTokens + tokens('outputTokens'),
        };
        if (!(error instanceof TokenBudgetExceededError) && record.attempts <= activity.retry) {
          parts.logger.warn({ err: error, activity: activity.id, attempt: record.attempts }, `activity "${activity.id}" failed; retrying`);
          continue;
        }
        record = { ...record, status: activity.fallback === 'Skip' ? 'skipped' : 'failed', fallback: activity.fallback, endedAt: clock.now() };
        break;
      }
    }
    await setActivity(record);
    parts.report({ type: 'activity-finish', run, activity: record });
    if (record.status !== 'completed') {
      if (activity.fallback === 'NotifyOwner') parts.report({ type: 'notify-owner', run, activity: record });
      if (activity.fallback === 'Abort') {
        aborted = true;
        break;
      }
    }
  }

  if (aborted) {
    const failed = run.activities.find((entry) => entry.fallback === 'Abort');
    await save({
      status: 'aborted',
      error: `activity "${failed?.id ?? '?'}" failed and its on_error fallback is Abort: ${failed?.error ?? ''}`,
      endedAt: clock.now(),
    });
    return run;
  }
  const emitted = binding.emit === undefined ? null : namespacedEvent(binding.package, binding.emit);
  await save({ status: 'completed', emitted, endedAt: clock.now() });
  if (emitted !== null) parts.report({ type: 'emit', run, event: emitted });
  return run;
}
