/**
 * The package runs the runtime writes itself, beside those `runBinding` writes: fires that did
 * not run (skipped, missed, unchanged, aborted by a check), and runs stopped with their package or
 * refused by the agent's hourly quota.
 */
import type { ActivityRunRecord, PackageRunRecord } from '../contracts/index.ts';
import { LoomError, messageOf } from '../errors/index.ts';
import { type ActivePackage, failRunningActivities, type PackageRuntimeState } from './package-runtime-state.ts';
import type { MeteredRun } from './run-spending.ts';

/** A fire recorded without running. */
export interface NonRun {
  pkg: ActivePackage;
  binding: string;
  trigger: string;
  status: 'skipped' | 'missed' | 'unchanged' | 'aborted';
  error: string | null;
  /** When the fire was due (now by default). */
  from?: number | undefined;
  /** The run's id (a job's), drawn otherwise. */
  id?: string | undefined;
  /** What a heartbeat's check found (an `unchanged` fire). */
  checkHash?: string | undefined;
  /**
   * The run started for the fire (its heartbeat's check decided it runs nothing after all): its
   * record is replaced, keeping its id and start, instead of a new one stored.
   */
  started?: PackageRunRecord | undefined;
}

/** Stores a fire that did not run, and returns its record. */
export async function recordNonRun(state: PackageRuntimeState, fire: NonRun): Promise<PackageRunRecord> {
  const { clock, ids, store } = state.options;
  const now = clock.now();
  const record: PackageRunRecord = {
    id: fire.started?.id ?? fire.id ?? ids.uuid(),
    package: fire.pkg.slug,
    binding: fire.binding,
    trigger: fire.trigger,
    status: fire.status,
    inputs: {},
    activities: [],
    emitted: null,
    error: fire.error,
    startedAt: fire.started?.startedAt ?? fire.from ?? now,
    endedAt: now,
    nodeId: null,
    ...(fire.checkHash === undefined ? {} : { checkHash: fire.checkHash }),
  };
  if (fire.started === undefined) await store.packageRuns.create(record);
  else await store.packageRuns.update(record);
  return record;
}

/** Marks the binding's running runs aborted because their package stopped. */
export async function abortRuns(state: PackageRuntimeState, pkg: ActivePackage, binding: string): Promise<void> {
  const { clock, store } = state.options;
  const reason = pkg.abort.signal.reason instanceof Error ? pkg.abort.signal.reason.message : 'the package stopped';
  for (const run of await store.packageRuns.list({ package: pkg.slug, binding, limit: 10 })) {
    if (run.status !== 'running') continue;
    const now = clock.now();
    await store.packageRuns.update({ ...run, status: 'aborted', activities: failRunningActivities(run.activities, reason, now), error: reason, endedAt: now });
    state.publish({ type: 'package-run-finish', at: now, agentId: pkg.agentId, name: pkg.slug, binding, runId: run.id, status: 'aborted', error: reason });
  }
}

/** A run its agent's hourly quota refused. */
export interface RefusedRun {
  pkg: ActivePackage;
  binding: string;
  trigger: string;
  runId: string;
  metered: MeteredRun;
}

/**
 * Ends a run its agent's hourly quota refused (see `meterRun`), with the refusal as its reason:
 * skipped when it had spent nothing (a scheduled fire of an agent whose hour is spent), else
 * aborted. Its attempt under way is marked so too.
 * @throws {LoomError} `PACKAGE_RUN_NOT_FOUND` when the run's record is gone.
 */
export async function endRefused(state: PackageRuntimeState, refused: RefusedRun): Promise<PackageRunRecord> {
  const { pkg, binding, trigger, runId, metered } = refused;
  const { clock, store } = state.options;
  const stored = await store.packageRuns.get(runId);
  if (stored === undefined)
    throw new LoomError('PACKAGE_RUN_NOT_FOUND', 'system', `cannot end run "${runId}" of "${binding}" (package "${pkg.slug}"): its record is gone`);
  const reason = messageOf(metered.stopped.reason);
  const now = clock.now();
  const skipped = metered.spent() === 0 && !stored.activities.some((activity) => activity.status === 'completed');
  const activities = stored.activities.map((activity): ActivityRunRecord =>
    activity.status === 'running' ? { ...activity, status: skipped ? 'skipped' : 'failed', error: reason, endedAt: now } : activity,
  );
  const error = skipped ? `not started: ${reason}` : `stopped: ${reason}`;
  const ended: PackageRunRecord = { ...stored, status: skipped ? 'skipped' : 'aborted', error, activities, endedAt: now, ...(skipped ? { nodeId: null } : {}) };
  await store.packageRuns.update(ended);
  if (skipped) state.publish({ type: 'package-skip', at: now, agentId: pkg.agentId, name: pkg.slug, binding, runId, trigger, reason: error });
  else state.publish({ type: 'package-run-finish', at: now, agentId: pkg.agentId, name: pkg.slug, binding, runId, status: 'aborted', error });
  return ended;
}
