/**
 * `BindingRuns`: how a binding of an active package runs. A fire starts a run unless one is going
 * (here, or on another live node), then records the skip; a heartbeat's check looks first; the
 * run is metered against its budget; its events are published, and what it emits starts the
 * bindings listening for it (here, or as `package-run` jobs on the shared queue). It also runs the
 * `package-run` jobs this node takes.
 */
import { z } from 'zod';
import type { ClaimedJob, JsonObject, PackageRunRecord } from '../contracts/index.ts';
import { LoomError, messageOf, StoreError } from '../errors/index.ts';
import type { PackageEvent } from '../kernel/index.ts';
import { namespacedSource } from './emit-graph.ts';
import { lookBeforeHeartbeat } from './heartbeat-check.ts';
import { withPackageRunSpan } from './package-run-span.ts';
import { type ActivePackage, bindingKey, type FireRequest, type PackageRuntimeState } from './package-runtime-state.ts';
import { type RunEvent, runBinding, type RunnableBinding, runToStart } from './run-binding.ts';
import { abortRuns, endRefused, recordNonRun } from './run-records.ts';
import { meterRun } from './run-spending.ts';

/** What a `package-run` job carries. */
const PackageRunJobSchema = z.strictObject({
  package: z.string().min(1),
  binding: z.string().min(1),
  trigger: z.string().min(1),
  inputs: z.record(z.string(), z.unknown()).optional(),
});

/** A run handed to the shared work queue. */
export interface QueuedRun {
  slug: string;
  binding: string;
  trigger: string;
  inputs: JsonObject;
  /** Names the logical run: a second enqueue of it adds nothing. */
  dedupeKey: string;
}

/** The binding an event reaches. */
interface Subscriber {
  slug: string;
  binding: string;
}

/** The namespaced event a binding's `source` names, in the package that declares it. */
export const resolveSource = (pkg: ActivePackage, source: string): string =>
  namespacedSource({ slug: pkg.slug, agentJson: pkg.prepared.loaded.agentJson }, source);

/** The runs of the active packages' bindings: at most one at a time per binding. */
export class BindingRuns {
  readonly #state: PackageRuntimeState;
  /** The bindings running here, by {@link bindingKey}. */
  readonly #busy = new Set<string>();
  /** The bindings each namespaced event starts. */
  readonly #subscribers = new Map<string, Subscriber[]>();
  /** The ids of the runs going in this process: never taken for another node's cut-off runs. */
  readonly #runningHere = new Set<string>();

  constructor(state: PackageRuntimeState) {
    this.#state = state;
  }

  /** Whether a run of the binding is going here. */
  isBusy(slug: string, binding: string): boolean {
    return this.#busy.has(bindingKey(slug, binding));
  }

  /** Whether the run is going in this process. */
  isRunningHere(runId: string): boolean {
    return this.#runningHere.has(runId);
  }

  /** Maps each namespaced event to the bindings of active packages it starts (after a package starts or stops). */
  rebuildSubscribers(): void {
    this.#subscribers.clear();
    for (const pkg of this.#state.active.values()) {
      for (const [name, binding] of Object.entries(pkg.prepared.loaded.agentJson.workflows)) {
        if (binding.trigger.type !== 'event') continue;
        for (const source of binding.trigger.sources) {
          const event = resolveSource(pkg, source);
          this.#subscribers.set(event, [...(this.#subscribers.get(event) ?? []), { slug: pkg.slug, binding: name }]);
        }
      }
    }
  }

  /** Hands a run of the binding to the shared work queue (nothing without one). */
  async enqueue(run: QueuedRun): Promise<void> {
    const { queue } = this.#state.options;
    if (queue === undefined) return;
    const { slug, binding, trigger, inputs } = run;
    const payload: JsonObject = Object.keys(inputs).length === 0 ? { package: slug, binding, trigger } : { package: slug, binding, trigger, inputs };
    await queue.enqueue({ kind: 'package-run', payload, dedupeKey: run.dedupeKey });
  }

  /**
   * Starts a run of the binding unless one is going, here or on another node (then records the
   * skip). Looking for a run going on another node and storing the new run are one step of the
   * store (`PackageRunRepository.start`), so of two nodes firing the binding at once one runs it.
   * Resolves when the run ends. A `job`'s run has the job's id and stops when the job's signal
   * aborts (its run is then left running, for the job's next attempt to resume).
   * @throws {LoomError} `PACKAGE_INACTIVE` when the package does not run here, `BINDING_BUSY` when the binding is running.
   */
  async fire(request: FireRequest): Promise<PackageRunRecord> {
    const state = this.#state;
    const { slug, binding: name, trigger, resume, job } = request;
    const extraInputs = request.inputs ?? {};
    const { kernel, store, clock, ids, node } = state.options;
    const pkg = state.active.get(slug);
    const binding = pkg?.prepared.bindings.get(name);
    if (pkg === undefined || binding === undefined)
      throw new LoomError('PACKAGE_INACTIVE', 'user', `package "${slug}" is not active (its agent is suspended, or it is not installed)`);
    const key = bindingKey(slug, name);
    // A resumed run keeps the inputs it started with (an event's output among them).
    const runnable: RunnableBinding =
      resume !== undefined
        ? { ...binding, inputs: resume.inputs }
        : Object.keys(extraInputs).length === 0
          ? binding
          : { ...binding, inputs: { ...binding.inputs, ...extraInputs } };
    let started: PackageRunRecord | undefined;
    let going: PackageRunRecord | undefined;
    if (!this.#busy.has(key)) {
      this.#busy.add(key);
      try {
        const record = runToStart(runnable, trigger, { clock, ids, nodeId: node?.id ?? null }, { resume, runId: job?.id });
        const start = await store.packageRuns.start(record);
        if (start.started) started = record;
        else going = start.going;
      } finally {
        if (started === undefined) this.#busy.delete(key);
      }
    }
    if (started === undefined) return this.#refuse(request, pkg, going);
    const runId = started.id;
    this.#runningHere.add(runId);
    // Every attempt's model calls count against the run's total_per_run, failed ones included.
    const metered = meterRun({ binding: runnable, kernel, runs: store.packageRuns, resume });
    const stops = [state.stopped, pkg.abort.signal, ...(job === undefined ? [] : [job.signal])];
    // A heartbeat's check runs first, in a new beat and in a resumed one no activity of which had
    // started: it was cut off during its check (or just after), the model not called yet. A run cut
    // off in its activities looked when it started; a manual run is a person's decision.
    const firedBy = pkg.prepared.loaded.agentJson.workflows[name]?.trigger;
    const unstarted = resume === undefined || resume.activities.every((activity) => activity.status === 'pending');
    const check = trigger === 'heartbeat' && unstarted && firedBy?.type === 'heartbeat' ? firedBy.check : undefined;
    const run = (async () => {
      let looked = check === undefined;
      try {
        let checkHash: string | undefined;
        if (check !== undefined) {
          const look = await lookBeforeHeartbeat(check, {
            runTool: (tool, input) => kernel.runAgentTool(pkg.agentId, tool, input),
            lastHash: () => store.packageRuns.lastCheckHash(slug, name),
            record: (status, error, hash) => this.#endUnrun(pkg, name, trigger, started, { status, error, checkHash: hash ?? undefined }),
          });
          looked = true;
          if (!look.run) return look.record;
          checkHash = look.hash;
        }
        let finished = metered.complete(
          await withPackageRunSpan({ package: slug, binding: name, trigger }, () =>
            runBinding(
              runnable,
              started,
              {
                kernel: metered.kernel,
                runs: metered.runs,
                clock,
                logger: state.logger,
                report: (event) => this.#report(pkg, name, metered.report(event)),
              },
              { signal: AbortSignal.any([...stops, metered.stopped]) },
            ),
          ),
        );
        // Only a completed run keeps what its check found: one that did not is tried again on the same state.
        if (checkHash !== undefined && finished.status === 'completed') {
          finished = { ...finished, checkHash };
          await store.packageRuns.update(finished);
        }
        state.publish({
          type: 'package-run-finish',
          at: clock.now(),
          agentId: pkg.agentId,
          name: slug,
          binding: name,
          runId: finished.id,
          status: finished.status,
          error: finished.error,
        });
        return finished;
      } catch (error) {
        // A check that could not be made leaves no run going that never ran (a restart would resume it).
        if (!looked) {
          const why = error instanceof StoreError ? "the store failed during its heartbeat's check" : "its heartbeat's check could not be made";
          const reason = `not started: ${why}: ${messageOf(error)}`;
          await this.#endUnrun(pkg, name, trigger, started, { status: 'aborted', error: reason }).catch((ended: unknown) =>
            state.logger.error({ err: ended, run: runId }, `could not end run "${runId}" of "${name}" (package "${slug}"), which did not start`),
          );
        }
        if (metered.stopped.aborted && !stops.some((signal) => signal.aborted)) return await endRefused(state, { pkg, binding: name, trigger, runId, metered });
        // Stopped with its package (not by the daemon stopping, whose runs resume at the next start):
        // the run ends as aborted, and emits nothing.
        if (pkg.abort.signal.aborted && !state.stopped.aborted) await abortRuns(state, pkg, name);
        throw error;
      } finally {
        this.#busy.delete(key);
        this.#runningHere.delete(runId);
      }
    })();
    return state.track(run);
  }

  /**
   * Refuses a fire of a busy binding (running here, or `going` on another node). A job's run to
   * resume stays as it is, for the job's next attempt; any other fire is recorded as skipped.
   * @throws {LoomError} `BINDING_BUSY`, always.
   */
  async #refuse(request: FireRequest, pkg: ActivePackage, going: PackageRunRecord | undefined): Promise<never> {
    const state = this.#state;
    const { slug, binding: name, trigger, resume, job } = request;
    const where = going === undefined ? '' : ` on another node (run "${going.id}")`;
    if (job !== undefined && resume !== undefined) {
      const place = going === undefined ? ' here' : where;
      throw new LoomError(
        'BINDING_BUSY',
        'user',
        `binding "${name}" of package "${slug}" is still running${place}; run "${resume.id}" is resumed at the job's next attempt`,
        {
          details: { package: slug, binding: name },
        },
      );
    }
    const skipped = await recordNonRun(state, {
      pkg,
      binding: name,
      trigger,
      status: 'skipped',
      error: `not started: the previous run of "${name}" is still going${where}`,
      id: job?.id,
    });
    state.publish({
      type: 'package-skip',
      at: skipped.startedAt,
      agentId: pkg.agentId,
      name: slug,
      binding: name,
      runId: skipped.id,
      trigger,
      reason: skipped.error ?? '',
    });
    throw new LoomError('BINDING_BUSY', 'user', `binding "${name}" of package "${slug}" is still running; the fire was recorded as skipped`, {
      details: { package: slug, binding: name, skippedRun: skipped.id },
    });
  }

  /** Ends the run started for a heartbeat's fire that runs nothing after all (its check found nothing new, or failed), and tells so. */
  async #endUnrun(
    pkg: ActivePackage,
    name: string,
    trigger: string,
    started: PackageRunRecord,
    outcome: { status: 'unchanged' | 'aborted'; error: string | null; checkHash?: string | undefined },
  ): Promise<PackageRunRecord> {
    const state = this.#state;
    const { status, error } = outcome;
    const record = await recordNonRun(state, { pkg, binding: name, trigger, status, error, checkHash: outcome.checkHash, started });
    if (status === 'aborted')
      state.logger.warn({ package: pkg.slug, binding: name }, `heartbeat of "${name}" (package "${pkg.slug}") did not run: ${error ?? ''}`);
    state.publish({
      type: 'package-run-finish',
      at: record.endedAt ?? state.options.clock.now(),
      agentId: pkg.agentId,
      name: pkg.slug,
      binding: name,
      runId: record.id,
      status,
      error,
    });
    return record;
  }

  /**
   * Runs a `package-run` job this node took. Its run has the job's id: a run an earlier attempt
   * finished is not run again, one it left going (its node died or stopped) is resumed (finished
   * activities kept), so the job leaves one run record however many times it runs.
   * @throws {LoomError} `PACKAGE_INACTIVE` when the package does not run on this node (the job is tried again, maybe elsewhere).
   */
  async runJob(job: ClaimedJob, signal: AbortSignal): Promise<void> {
    const { store } = this.#state.options;
    const { logger } = this.#state;
    const parsed = PackageRunJobSchema.safeParse(job.payload);
    if (!parsed.success) throw new Error(`cannot run job "${job.id}": its payload is not a package run (${parsed.error.message})`);
    const { package: slug, binding: name, trigger } = parsed.data;
    const inputs = (parsed.data.inputs ?? {}) as JsonObject;
    if ((await store.packages.get(slug)) === undefined) {
      logger.warn({ job: job.id, package: slug, binding: name }, `dropped job "${job.id}": package "${slug}" is not installed any more`);
      return;
    }
    const pkg = this.#state.active.get(slug);
    if (pkg === undefined) {
      throw new LoomError(
        'PACKAGE_INACTIVE',
        'user',
        `cannot run "${name}" of package "${slug}" (job "${job.id}") on this node: the package is not active here (its agent is suspended, or it was installed after this node started)`,
        {
          details: { package: slug, binding: name, job: job.id },
        },
      );
    }
    if (!pkg.prepared.bindings.has(name)) {
      logger.warn({ job: job.id, package: slug, binding: name }, `dropped job "${job.id}": package "${slug}" has no binding "${name}" any more`);
      return;
    }
    const earlier = await store.packageRuns.get(job.id);
    if (earlier !== undefined && earlier.status !== 'running' && earlier.status !== 'interrupted') return;
    if (earlier !== undefined)
      logger.warn(
        { job: job.id, run: earlier.id, attempt: job.attempt },
        `resuming run "${earlier.id}" of "${name}" (package "${slug}"): attempt ${job.attempt} of its job`,
      );
    try {
      await this.fire({ slug, binding: name, trigger, inputs, resume: earlier, job: { id: job.id, signal } });
    } catch (error) {
      // Recorded as skipped (the job's one run): done.
      if (error instanceof LoomError && error.code === 'BINDING_BUSY' && earlier === undefined) {
        logger.warn({ package: slug, binding: name }, error.message);
        return;
      }
      // Its package stopped here: the run was recorded aborted, which ends the job.
      if (pkg.abort.signal.aborted && !this.#state.stopped.aborted && !signal.aborted) return;
      throw error;
    }
  }

  /** Publishes a run's event; an emit starts the bindings listening for it. */
  #report(pkg: ActivePackage, binding: string, event: RunEvent): void {
    const { logger } = this.#state;
    const publish = (event: PackageEvent): void => this.#state.publish(event);
    const base = { at: this.#state.options.clock.now(), agentId: pkg.agentId, name: pkg.slug, binding, runId: event.run.id };
    switch (event.type) {
      case 'run-start':
        publish({ ...base, type: 'package-fire', trigger: event.run.trigger });
        return;
      case 'activity-start':
        publish({ ...base, type: 'package-activity-start', activity: event.activity, attempt: event.attempt });
        return;
      case 'activity-finish': {
        const { activity } = event;
        publish({
          ...base,
          type: 'package-activity-finish',
          activity: activity.id,
          status: activity.status,
          inputTokens: activity.inputTokens,
          outputTokens: activity.outputTokens,
          costUsd: activity.costUsd,
          error: activity.error,
        });
        return;
      }
      case 'notify-owner':
        logger.warn(
          { package: pkg.slug, binding, activity: event.activity.id },
          `package "${pkg.slug}": activity "${event.activity.id}" of "${binding}" failed: ${event.activity.error ?? ''}`,
        );
        publish({ ...base, type: 'package-notify', activity: event.activity.id, error: event.activity.error ?? '' });
        return;
      case 'emit': {
        publish({ ...base, type: 'package-emit', event: event.event });
        const output = [...event.run.activities].reverse().find((activity) => activity.status === 'completed')?.output ?? null;
        for (const target of this.#subscribers.get(event.event) ?? []) {
          const inputs: JsonObject = { event: { name: event.event, package: pkg.slug, binding, output } };
          const trigger = `event:${event.event}`;
          const started =
            this.#state.options.queue === undefined
              ? this.fire({ slug: target.slug, binding: target.binding, trigger, inputs })
              : // One job per run and target: a run resumed after its node died emits again, and adds nothing.
                this.enqueue({
                  slug: target.slug,
                  binding: target.binding,
                  trigger,
                  inputs,
                  dedupeKey: `emit ${event.run.id} ${target.slug}/${target.binding}`,
                });
          started.catch((error: unknown) =>
            logger.error({ err: error, event: event.event }, `could not start "${target.binding}" of package "${target.slug}" on ${event.event}`),
          );
        }
        return;
      }
    }
  }
}
