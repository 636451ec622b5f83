import { z } from 'zod';
import type { ActivityRunRecord, ClaimedJob, Clock, IdGenerator, InstalledPackageRecord, JsonObject, Leadership, Logger, PackageRunRecord, Store, WorkQueue } from '../contracts/index.ts';
import { LoomError, messageOf } from '../errors/index.ts';
import type { AgentEntry, AgentLifecycleHook, Kernel, PackageEvent } from '../kernel/index.ts';
import { type CatchUpSettings, cronAfter, cronInstants, DEFAULT_CATCH_UP, intervalAfter, intervalInstants, planCatchUp, type TimerSpec } from '../scheduler/index.ts';
import { namespacedSource } from './emit-graph.ts';
import { type LoadedPackage, LoomTomlSchema } from './load-package.ts';
import { AgentJsonSchema, type ClockWindow, inWindow, type PackageTrigger, parseDuration, parseWindow } from './package-schema.ts';
import { type PackageEnvironment, type PreparedPackage, preparePackage } from './prepare-package.ts';
import { type RunEvent, runBinding, type RunnableBinding } from './run-binding.ts';
import { lookBeforeHeartbeat } from './heartbeat-check.ts';
import { withPackageRunSpan } from './package-run-span.ts';
import { type MeteredRun, meterRun } from './run-spending.ts';

/** What the package runtime needs. */
export interface PackageRuntimeOptions {
  kernel: Pick<Kernel, 'runTask' | 'publish' | 'runAgentTool'>;
  store: Pick<Store, 'packageRuns' | 'packages'>;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  environment: PackageEnvironment;
  /**
   * The one scheduler, for schedule and heartbeat triggers. Without it (a one-off CLI command)
   * nothing fires on time, and interrupted runs are left for the daemon: only manual runs and
   * the event chains they start run.
   */
  timers?: { addTimer(timer: TimerSpec): () => void } | undefined;
  /**
   * When several daemons share the store: what only the leader does at its start (record the
   * instants missed while nothing fired, resume the runs cut off) is done when this node leads,
   * and again each time it takes over. Without it this daemon is alone and does it at its start.
   */
  leadership?: Leadership | undefined;
  /**
   * When several daemons share the store: the shared work queue. Timed triggers' fires and the
   * runs an emitted event starts are enqueued as `package-run` jobs, which any node takes, and
   * this node runs the jobs it takes (each job's run has the job's id, so a job run again after
   * its node died resumes that run instead of starting another). Without it they run here.
   */
  queue?: WorkQueue | undefined;
  /**
   * When several daemons share the store: this node's id, recorded on the runs it runs, and
   * whether a node lives. A run marked running whose node lives is that node's: a fire of its
   * binding here is skipped, and only a run whose node is gone is recovered by a new leader.
   */
  node?: { id: string; alive(id: string): Promise<boolean> } | undefined;
  /**
   * What becomes of timed fires missed while nothing fired (`[scheduler].catch_up` and its window,
   * decision 0046): each is recorded as missed, and `once` runs the latest late, `all` each.
   * {@link DEFAULT_CATCH_UP} (`once`) by default.
   */
  catchUp?: CatchUpSettings | undefined;
}

/** What a `package-run` job carries. */
const PackageRunJobSchema = z.strictObject({
  package: z.string().min(1),
  binding: z.string().min(1),
  trigger: z.string().min(1),
  inputs: z.record(z.string(), z.unknown()).optional(),
});

/** A binding as `loom package show` lists it. */
export interface BindingView {
  name: string;
  description: string;
  trigger: PackageTrigger;
  /** When its trigger fires next (epoch ms), for schedule and heartbeat triggers of an active package. */
  nextFireAt: number | null;
  emit: string | null;
  /** The namespaced events it runs on. */
  sources: string[];
  costEstimate: string;
  totalPerRun: number;
  running: boolean;
}

/**
 * The package runtime (spec/04 "AgentWorker Runtime"), a lifecycle hook of the kernel: while a
 * package's agent runs, its schedule and heartbeat triggers are timers on the one scheduler and
 * its event triggers listen for the namespaced emits of installed packages; when the agent is
 * suspended or killed they stop. A binding never runs twice at once: a fire meanwhile is
 * recorded as skipped. At the daemon's start, runs cut off by the last stop are marked
 * interrupted and resumed (their finished activities are not run again), and the instants a
 * trigger passed while the daemon was down are recorded as one missed fire, not replayed. When
 * several daemons share the store, that is the leader's work, done again by a node that takes
 * over; while other nodes live, it resumes only the cut-off runs of timed triggers (which only a
 * leader starts: the others' manual runs may still be going).
 */
export interface PackageRuntime extends AgentLifecycleHook {
  readonly name: 'packages';
  /**
   * Starts an installed package's triggers (idempotent). The hook does it when the agent the
   * package was installed for starts: the agent its record names, never one whose manifest only
   * says `[metadata] package = "<slug>"` (anyone who may spawn an agent may write that).
   */
  activate(slug: string): Promise<void>;
  /** Stops them (idempotent). */
  deactivate(slug: string): void;
  /**
   * Runs a binding now, as its trigger would (a manual run; any binding may be run so).
   * @throws {LoomError} `PACKAGE_NOT_FOUND`, `BINDING_NOT_FOUND`, `PACKAGE_INACTIVE`, or
   *   `BINDING_BUSY` when it is still running (the fire is recorded as skipped).
   */
  run(slug: string, binding: string, inputs?: JsonObject): Promise<PackageRunRecord>;
  /** The package's bindings with their next fire times. */
  bindings(slug: string): Promise<BindingView[]>;
  /** Whether the package's triggers are running. */
  isActive(slug: string): boolean;
  /** Resolves when no run is in flight (runs started meanwhile included). */
  idle(): Promise<void>;
  /** Stops every trigger and cancels the runs in flight (they are resumed at the next start). */
  shutdown(): Promise<void>;
}

interface ActivePackage {
  slug: string;
  agentId: string;
  prepared: PreparedPackage;
  stops: (() => void)[];
  /** The next instant of each timed binding. */
  next: Map<string, number | null>;
  /** Aborted when the package stops (its agent suspended, updated or killed): its runs stop with it. */
  abort: AbortController;
}

/** The binding an event reaches. */
interface Subscriber {
  slug: string;
  binding: string;
}

/** The error a run cut off by a stop is marked with. */
const INTERRUPTED = 'interrupted: the daemon stopped while the run was going';

/** How often the leader looks for runs whose node died, when nodes share the store. */
const ORPHAN_SWEEP_MS = 10_000;

/** Rebuilds a prepared package from what the store holds, against today's configuration. */
export function preparedFromRecord(record: InstalledPackageRecord, environment: PackageEnvironment): PreparedPackage {
  const loaded: LoadedPackage = {
    slug: record.slug,
    qualifiedName: record.qualifiedName ?? undefined,
    version: record.version,
    description: '',
    dir: '',
    persona: record.persona,
    rawAgentJson: record.agentJson,
    agentJson: AgentJsonSchema.parse(record.agentJson),
    loomToml: LoomTomlSchema.parse(record.loomToml),
  };
  return preparePackage(loaded, environment, new Map(Object.entries(record.skills)));
}

/** The minute of the day at `at` in `timeZone` (formatters cached per zone). */
function minuteOfDay(at: number, timeZone: string, formatters: Map<string, Intl.DateTimeFormat>): number {
  let format = formatters.get(timeZone);
  if (format === undefined) {
    format = new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
    formatters.set(timeZone, format);
  }
  let hour = 0;
  let minute = 0;
  for (const part of format.formatToParts(at)) {
    if (part.type === 'hour') hour = Number(part.value);
    if (part.type === 'minute') minute = Number(part.value);
  }
  return hour * 60 + minute;
}

/** Creates the package runtime. Hand it to the kernel as a hook; the daemon gives it the scheduler. */
export function createPackageRuntime(options: PackageRuntimeOptions): PackageRuntime {
  const { kernel, store, clock, logger: baseLogger, environment } = options;
  const logger = baseLogger.child({ subsystem: 'packages' });
  const active = new Map<string, ActivePackage>();
  const subscribers = new Map<string, Subscriber[]>();
  const busy = new Set<string>();
  const inFlight = new Set<Promise<unknown>>();
  const formatters = new Map<string, Intl.DateTimeFormat>();
  const controller = new AbortController();
  const { leadership, queue } = options;
  // The daemon's start: runs its last stop cut off, resumed as their packages activate.
  let interrupted: Promise<Map<string, PackageRunRecord[]>> | undefined;
  // Whether this node was alone when it began to lead (decided once per leadership).
  let alone: Promise<boolean> | undefined;
  // The ids of the runs going in this process: never taken for another node's cut-off runs.
  const runningHere = new Set<string>();

  const keyOf = (slug: string, binding: string): string => `${slug}\u0000${binding}`;

  function publish(event: PackageEvent): void {
    kernel.publish(event).catch((error: unknown) => logger.error({ err: error, eventType: event.type }, 'could not record a package event'));
  }

  function track<T>(promise: Promise<T>): Promise<T> {
    inFlight.add(promise);
    const remove = (): void => {
      inFlight.delete(promise);
    };
    promise.then(remove, remove);
    return promise;
  }

  /** Every run still marked running, marked interrupted (at most once per leadership), by package. */
  function interruptedRuns(): Promise<Map<string, PackageRunRecord[]>> {
    interrupted ??= (async () => {
      const byPackage = new Map<string, PackageRunRecord[]>();
      const runs = (await store.packageRuns.interruptRunning(clock.now(), INTERRUPTED)).filter((run) => !runningHere.has(run.id));
      for (const run of runs) byPackage.set(run.package, [...(byPackage.get(run.package) ?? []), run]);
      if (runs.length > 0) logger.warn({ runs: runs.map((run) => run.id) }, `${runs.length} package run(s) were cut off by the last stop; resuming them`);
      return byPackage;
    })();
    return interrupted;
  }

  /**
   * The package's runs still marked running whose node is gone, marked interrupted: with other
   * nodes alive, a run of a live node is its own. A run that records no node (from before nodes
   * were recorded) counts as gone when it is a timed trigger's, which only a leader starts.
   */
  async function interruptOrphanedRuns(pkg: ActivePackage): Promise<PackageRunRecord[]> {
    const runs: PackageRunRecord[] = [];
    const timed = (trigger: string): boolean => trigger === 'schedule' || trigger === 'heartbeat';
    const orphaned = async (run: PackageRunRecord): Promise<boolean> =>
      run.nodeId === null ? timed(run.trigger) : run.nodeId !== options.node?.id && !((await options.node?.alive(run.nodeId)) ?? false);
    for (const name of Object.keys(pkg.prepared.loaded.agentJson.workflows)) {
      for (const run of await store.packageRuns.list({ package: pkg.slug, binding: name, limit: 100 })) {
        if (run.status !== 'running' || runningHere.has(run.id) || !(await orphaned(run))) continue;
        const now = clock.now();
        const activities = run.activities.map((activity) => (activity.status === 'running' ? { ...activity, status: 'failed' as const, error: INTERRUPTED, endedAt: now } : activity));
        const cut: PackageRunRecord = { ...run, status: 'interrupted', error: INTERRUPTED, endedAt: now, activities };
        await store.packageRuns.update(cut);
        runs.push(cut);
      }
    }
    if (runs.length > 0) logger.warn({ runs: runs.map((run) => run.id) }, `${runs.length} run(s) of package "${pkg.slug}" were cut off when their node stopped; resuming them`);
    return runs;
  }

  /**
   * The package's runs cut off by the last stop (of this daemon, or of the leader this node took
   * over from), marked interrupted, each given once. Alone, every run still marked running; while
   * other nodes live, only those of the package's timed triggers (which only a leader starts: the
   * others' manual runs may still be going). Never a run going here.
   */
  async function cutOffRuns(pkg: ActivePackage): Promise<PackageRunRecord[]> {
    alone ??= leadership === undefined ? Promise.resolve(true) : leadership.othersAlive().then((others) => !others);
    if (!(await alone)) return interruptOrphanedRuns(pkg);
    const pending = await interruptedRuns();
    const runs = pending.get(pkg.slug) ?? [];
    pending.delete(pkg.slug);
    return runs;
  }

  /** The runs cut off, less those of jobs: the queue runs those again itself (on whichever node takes them). */
  async function resumable(runs: PackageRunRecord[]): Promise<PackageRunRecord[]> {
    if (queue === undefined || runs.length === 0) return runs;
    const jobs = await queue.jobIds(runs.map((run) => run.id));
    return runs.filter((run) => !jobs.has(run.id));
  }

  function resume(pkg: ActivePackage, run: PackageRunRecord): void {
    if (!pkg.prepared.bindings.has(run.binding)) return;
    fire(pkg.slug, run.binding, run.trigger, {}, run).catch((error: unknown) => logger.error({ err: error, package: pkg.slug, run: run.id }, `resumed run "${run.id}" failed`));
  }

  /** A node that takes over as leader: what the last leader's timers missed, and the runs it left cut off. */
  async function takeOver(): Promise<void> {
    interrupted = undefined;
    alone = undefined;
    for (const pkg of [...active.values()]) {
      const record = await store.packages.get(pkg.slug);
      if (record === undefined || active.get(pkg.slug) !== pkg) continue;
      recordMissed(pkg, record, 'no node led');
      for (const run of await resumable(await cutOffRuns(pkg))) resume(pkg, run);
    }
  }

  /**
   * With nodes sharing the store, the leader looks for runs whose node died every
   * {@link ORPHAN_SWEEP_MS} (a node is gone once its heartbeat is 10 s old), and resumes them.
   */
  async function sweepOrphans(): Promise<void> {
    for (const pkg of [...active.values()]) {
      for (const run of await resumable(await interruptOrphanedRuns(pkg))) if (active.get(pkg.slug) === pkg) resume(pkg, run);
    }
  }
  // One recovery at a time: two would both find a run cut off, and resume it twice.
  let recovering: Promise<void> = Promise.resolve();
  const recover = (work: () => Promise<void>, what: string): void => {
    recovering = recovering.then(work).catch((error: unknown) => logger.error({ err: error }, what));
  };
  const stopSweep =
    options.node === undefined || options.timers === undefined
      ? undefined
      : options.timers.addTimer({
          name: 'package runs/orphans',
          next: intervalInstants(ORPHAN_SWEEP_MS, clock),
          fire: () => recover(sweepOrphans, 'could not resume the package runs of a node that died'),
        });

  let led = leadership?.isLeader() ?? true;
  const unsubscribe = leadership?.subscribe((leader) => {
    const tookOver = leader && !led;
    led = leader;
    if (!tookOver || options.timers === undefined || controller.signal.aborted) return;
    recover(takeOver, 'could not take over the timed work of the last leader');
  });

  function rebuildSubscribers(): void {
    subscribers.clear();
    for (const pkg of active.values()) {
      for (const [name, binding] of Object.entries(pkg.prepared.loaded.agentJson.workflows)) {
        if (binding.trigger.type !== 'event') continue;
        for (const source of binding.trigger.sources) {
          const event = resolveSource(pkg, source);
          subscribers.set(event, [...(subscribers.get(event) ?? []), { slug: pkg.slug, binding: name }]);
        }
      }
    }
  }

  const resolveSource = (pkg: ActivePackage, source: string): string => namespacedSource({ slug: pkg.slug, agentJson: pkg.prepared.loaded.agentJson }, source);

  function report(pkg: ActivePackage, binding: string, event: RunEvent): void {
    const base = { at: clock.now(), agentId: pkg.agentId, name: pkg.slug, binding, runId: event.run.id };
    switch (event.type) {
      case 'run-start':
        runningHere.add(event.run.id);
        publish({ ...base, type: 'package-fire', trigger: event.run.trigger });
        return;
      case 'activity-start':
        publish({ ...base, type: 'package-activity-start', activity: event.activity, attempt: event.attempt });
        return;
      case 'activity-finish': {
        const { activity } = event;
        publish({ ...base, type: 'package-activity-finish', activity: activity.id, status: activity.status, inputTokens: activity.inputTokens, outputTokens: activity.outputTokens, costUsd: activity.costUsd, error: activity.error });
        return;
      }
      case 'notify-owner':
        logger.warn({ package: pkg.slug, binding, activity: event.activity.id }, `package "${pkg.slug}": activity "${event.activity.id}" of "${binding}" failed: ${event.activity.error ?? ''}`);
        publish({ ...base, type: 'package-notify', activity: event.activity.id, error: event.activity.error ?? '' });
        return;
      case 'emit': {
        publish({ ...base, type: 'package-emit', event: event.event });
        const output = [...event.run.activities].reverse().find((activity) => activity.status === 'completed')?.output ?? null;
        for (const target of subscribers.get(event.event) ?? []) {
          const inputs: JsonObject = { event: { name: event.event, package: pkg.slug, binding, output } };
          const started =
            queue === undefined
              ? fire(target.slug, target.binding, `event:${event.event}`, inputs)
              : // One job per run and target: a run resumed after its node died emits again, and adds nothing.
                enqueueRun(target.slug, target.binding, `event:${event.event}`, inputs, `emit ${event.run.id} ${target.slug}/${target.binding}`);
          started.catch((error: unknown) => logger.error({ err: error, event: event.event }, `could not start "${target.binding}" of package "${target.slug}" on ${event.event}`));
        }
        return;
      }
    }
  }

  /**
   * Starts a run of the binding unless one is going (then records the skip). Resolves when the run
   * ends. A `job`'s run has the job's id and stops when the job's signal aborts (its run is then
   * left running, for the job's next attempt to resume).
   */
  async function fire(slug: string, name: string, trigger: string, extraInputs: JsonObject = {}, resume?: PackageRunRecord, job?: { id: string; signal: AbortSignal }): Promise<PackageRunRecord> {
    const pkg = active.get(slug);
    const binding = pkg?.prepared.bindings.get(name);
    if (pkg === undefined || binding === undefined) throw new LoomError('PACKAGE_INACTIVE', 'user', `package "${slug}" is not active (its agent is suspended, or it is not installed)`);
    const key = keyOf(slug, name);
    if (busy.has(key) && job !== undefined && resume !== undefined) {
      // A job's run to resume stays as it is: the job is tried again later.
      throw new LoomError('BINDING_BUSY', 'user', `binding "${name}" of package "${slug}" is still running here; run "${resume.id}" is resumed at the job's next attempt`, { details: { package: slug, binding: name } });
    }
    const elsewhere = busy.has(key) ? undefined : await runningElsewhere(slug, name, job?.id);
    if (busy.has(key) || elsewhere !== undefined) {
      const where = elsewhere === undefined ? '' : ` on another node (run "${elsewhere}")`;
      const skipped = await recordNonRun(pkg, name, trigger, 'skipped', `not started: the previous run of "${name}" is still going${where}`, undefined, job?.id);
      publish({ type: 'package-skip', at: skipped.startedAt, agentId: pkg.agentId, name: slug, binding: name, runId: skipped.id, trigger, reason: skipped.error ?? '' });
      throw new LoomError('BINDING_BUSY', 'user', `binding "${name}" of package "${slug}" is still running; the fire was recorded as skipped`, { details: { package: slug, binding: name, skippedRun: skipped.id } });
    }
    busy.add(key);
    // A resumed run keeps the inputs it started with (an event's output among them).
    const runnable: RunnableBinding =
      resume !== undefined ? { ...binding, inputs: resume.inputs } : Object.keys(extraInputs).length === 0 ? binding : { ...binding, inputs: { ...binding.inputs, ...extraInputs } };
    let runId: string | undefined;
    // Every attempt's model calls count against the run's total_per_run, failed ones included.
    const metered = meterRun(runnable, kernel, store.packageRuns, resume);
    const stops = [controller.signal, pkg.abort.signal, ...(job === undefined ? [] : [job.signal])];
    // A heartbeat's check runs first (a resumed run has looked already, a manual run is a person's decision).
    const firedBy = pkg.prepared.loaded.agentJson.workflows[name]?.trigger;
    const check = trigger === 'heartbeat' && resume === undefined && firedBy?.type === 'heartbeat' ? firedBy.check : undefined;
    const run = (async () => {
      try {
        let checkHash: string | undefined;
        if (check !== undefined) {
          const looked = await lookBeforeHeartbeat(check, {
            runTool: (tool, input) => kernel.runAgentTool(pkg.agentId, tool, input),
            lastHash: () => store.packageRuns.lastCheckHash(slug, name),
            record: async (status, error, hash) => {
              const record = await recordNonRun(pkg, name, trigger, status, error, undefined, job?.id, hash ?? undefined);
              if (status === 'aborted') logger.warn({ package: slug, binding: name }, `heartbeat of "${name}" (package "${slug}") did not run: ${error ?? ''}`);
              publish({ type: 'package-run-finish', at: record.endedAt ?? clock.now(), agentId: pkg.agentId, name: slug, binding: name, runId: record.id, status, error });
              return record;
            },
          });
          if (!looked.run) return looked.record;
          checkHash = looked.hash;
        }
        let finished = metered.complete(
          await withPackageRunSpan({ package: slug, binding: name, trigger }, () =>
            runBinding(
              runnable,
              trigger,
              {
                kernel: metered.kernel,
                runs: metered.runs,
                clock,
                ids: options.ids,
                logger,
                report: (event) => {
                  runId ??= event.run.id;
                  report(pkg, name, metered.report(event));
                },
                nodeId: options.node?.id ?? null,
              },
              {
                signal: AbortSignal.any([...stops, metered.stopped]),
                ...(resume === undefined ? {} : { resume }),
                ...(job === undefined ? {} : { runId: job.id }),
              },
            ),
          ),
        );
        // Only a completed run keeps what its check found: one that did not is tried again on the same state.
        if (checkHash !== undefined && finished.status === 'completed') {
          finished = { ...finished, checkHash };
          await store.packageRuns.update(finished);
        }
        publish({ type: 'package-run-finish', at: clock.now(), agentId: pkg.agentId, name: slug, binding: name, runId: finished.id, status: finished.status, error: finished.error });
        return finished;
      } catch (error) {
        if (metered.stopped.aborted && runId !== undefined && !stops.some((signal) => signal.aborted)) return await endRefused(pkg, name, trigger, runId, metered);
        // Stopped with its package (not by the daemon stopping, whose runs resume at the next start):
        // the run ends as aborted, and emits nothing.
        if (pkg.abort.signal.aborted && !controller.signal.aborted) await abortRuns(pkg, name);
        throw error;
      } finally {
        busy.delete(key);
        if (runId !== undefined) runningHere.delete(runId);
      }
    })();
    return track(run);
  }

  /**
   * The id of a run of the binding that another node, alive, runs now (checked only when nodes
   * share the store); `except` is the job's own run (taken again here after its node died).
   */
  async function runningElsewhere(slug: string, binding: string, except: string | undefined): Promise<string | undefined> {
    const { node } = options;
    if (node === undefined) return undefined;
    for (const run of await store.packageRuns.list({ package: slug, binding, limit: 10 })) {
      if (run.status !== 'running' || run.id === except || run.nodeId === null || run.nodeId === node.id) continue;
      if (await node.alive(run.nodeId)) return run.id;
    }
    return undefined;
  }

  /** Marks the binding's running runs aborted because their package stopped. */
  async function abortRuns(pkg: ActivePackage, binding: string): Promise<void> {
    const reason = pkg.abort.signal.reason instanceof Error ? pkg.abort.signal.reason.message : 'the package stopped';
    for (const run of await store.packageRuns.list({ package: pkg.slug, binding, limit: 10 })) {
      if (run.status !== 'running') continue;
      const now = clock.now();
      const activities = run.activities.map((activity) => (activity.status === 'running' ? { ...activity, status: 'failed' as const, error: reason, endedAt: now } : activity));
      await store.packageRuns.update({ ...run, status: 'aborted', activities, error: reason, endedAt: now });
      publish({ type: 'package-run-finish', at: now, agentId: pkg.agentId, name: pkg.slug, binding, runId: run.id, status: 'aborted', error: reason });
    }
  }

  /**
   * Ends a run its agent's hourly quota refused (see `meterRun`), with the refusal as its reason:
   * skipped when it had spent nothing (a scheduled fire of an agent whose hour is spent), else
   * aborted. Its attempt under way is marked so too.
   */
  async function endRefused(pkg: ActivePackage, binding: string, trigger: string, runId: string, metered: MeteredRun): Promise<PackageRunRecord> {
    const stored = await store.packageRuns.get(runId);
    if (stored === undefined) throw new LoomError('PACKAGE_RUN_NOT_FOUND', 'system', `cannot end run "${runId}" of "${binding}" (package "${pkg.slug}"): its record is gone`);
    const reason = messageOf(metered.stopped.reason);
    const now = clock.now();
    const skipped = metered.spent() === 0 && !stored.activities.some((activity) => activity.status === 'completed');
    const activities = stored.activities.map((activity): ActivityRunRecord => (activity.status === 'running' ? { ...activity, status: skipped ? 'skipped' : 'failed', error: reason, endedAt: now } : activity));
    const error = skipped ? `not started: ${reason}` : `stopped: ${reason}`;
    const ended: PackageRunRecord = { ...stored, status: skipped ? 'skipped' : 'aborted', error, activities, endedAt: now, ...(skipped ? { nodeId: null } : {}) };
    await store.packageRuns.update(ended);
    if (skipped) publish({ type: 'package-skip', at: now, agentId: pkg.agentId, name: pkg.slug, binding, runId, trigger, reason: error });
    else publish({ type: 'package-run-finish', at: now, agentId: pkg.agentId, name: pkg.slug, binding, runId, status: 'aborted', error });
    return ended;
  }

  async function recordNonRun(pkg: ActivePackage, binding: string, trigger: string, status: 'skipped' | 'missed' | 'unchanged' | 'aborted', error: string | null, from?: number, id?: string, checkHash?: string): Promise<PackageRunRecord> {
    const now = clock.now();
    const record: PackageRunRecord = { id: id ?? options.ids.uuid(), package: pkg.slug, binding, trigger, status, inputs: {}, activities: [], emitted: null, error, startedAt: from ?? now, endedAt: now, nodeId: null, ...(checkHash === undefined ? {} : { checkHash }) };
    await store.packageRuns.create(record);
    return record;
  }

  /** A timed trigger's instant: fire unless outside the heartbeat's window; a busy binding's fire is recorded as skipped. */
  function onTimer(pkg: ActivePackage, name: string, trigger: string, window: ClockWindow | undefined, at: number): void {
    if (window !== undefined && !inWindow(window, minuteOfDay(at, pkg.prepared.timezone, formatters))) return;
    store.packages.setLastFire(pkg.slug, name, at).catch((error: unknown) => logger.error({ err: error }, 'could not record a fire'));
    if (queue !== undefined) {
      // The instant's one job (named like the timer's claim): whichever node takes it runs it.
      enqueueRun(pkg.slug, name, trigger, {}, `package ${pkg.slug}/${name}@${at}`).catch((error: unknown) =>
        logger.error({ err: error, package: pkg.slug, binding: name }, `could not enqueue the run of "${name}" (package "${pkg.slug}") at ${new Date(at).toISOString()}: it does not run`),
      );
      return;
    }
    fire(pkg.slug, name, trigger).catch((error: unknown) => {
      if (error instanceof LoomError && error.code === 'BINDING_BUSY') logger.warn({ package: pkg.slug, binding: name }, error.message);
      else if (!controller.signal.aborted) logger.error({ err: error, package: pkg.slug, binding: name }, `run of "${name}" (package "${pkg.slug}") failed`);
    });
  }

  /** Hands a run of the binding to the shared work queue (`dedupeKey` names the logical run). */
  async function enqueueRun(slug: string, binding: string, trigger: string, inputs: JsonObject, dedupeKey: string): Promise<void> {
    if (queue === undefined) return;
    const payload: JsonObject = Object.keys(inputs).length === 0 ? { package: slug, binding, trigger } : { package: slug, binding, trigger, inputs };
    await queue.enqueue({ kind: 'package-run', payload, dedupeKey });
  }

  /**
   * Runs a `package-run` job this node took. Its run has the job's id: a run an earlier attempt
   * finished is not run again, one it left going (its node died or stopped) is resumed (finished
   * activities kept), so the job leaves one run record however many times it runs.
   * @throws {LoomError} `PACKAGE_INACTIVE` when the package does not run on this node (the job is tried again, maybe elsewhere).
   */
  async function runJob(job: ClaimedJob, signal: AbortSignal): Promise<void> {
    const parsed = PackageRunJobSchema.safeParse(job.payload);
    if (!parsed.success) throw new Error(`cannot run job "${job.id}": its payload is not a package run (${parsed.error.message})`);
    const { package: slug, binding: name, trigger } = parsed.data;
    const inputs = (parsed.data.inputs ?? {}) as JsonObject;
    if ((await store.packages.get(slug)) === undefined) {
      logger.warn({ job: job.id, package: slug, binding: name }, `dropped job "${job.id}": package "${slug}" is not installed any more`);
      return;
    }
    const pkg = active.get(slug);
    if (pkg === undefined) {
      throw new LoomError('PACKAGE_INACTIVE', 'user', `cannot run "${name}" of package "${slug}" (job "${job.id}") on this node: the package is not active here (its agent is suspended, or it was installed after this node started)`, {
        details: { package: slug, binding: name, job: job.id },
      });
    }
    if (!pkg.prepared.bindings.has(name)) {
      logger.warn({ job: job.id, package: slug, binding: name }, `dropped job "${job.id}": package "${slug}" has no binding "${name}" any more`);
      return;
    }
    const earlier = await store.packageRuns.get(job.id);
    if (earlier !== undefined && earlier.status !== 'running' && earlier.status !== 'interrupted') return;
    if (earlier !== undefined) logger.warn({ job: job.id, run: earlier.id, attempt: job.attempt }, `resuming run "${earlier.id}" of "${name}" (package "${slug}"): attempt ${job.attempt} of its job`);
    try {
      await fire(slug, name, trigger, inputs, earlier, { id: job.id, signal });
    } catch (error) {
      // Recorded as skipped (the job's one run): done.
      if (error instanceof LoomError && error.code === 'BINDING_BUSY' && earlier === undefined) {
        logger.warn({ package: slug, binding: name }, error.message);
        return;
      }
      // Its package stopped here: the run was recorded aborted, which ends the job.
      if (pkg.abort.signal.aborted && !controller.signal.aborted && !signal.aborted) return;
      throw error;
    }
  }
  queue?.handle('package-run', runJob);

  /**
   * The trigger's first instant strictly after a given one (null when none is left): a cron
   * time, or a heartbeat's beat every interval from `since` that falls inside its window.
   */
  function instantsAfter(pkg: ActivePackage, trigger: PackageTrigger, since: number): (at: number) => number | null {
    if (trigger.type === 'schedule') return cronAfter(trigger.cron, pkg.prepared.timezone);
    const interval = trigger.type === 'heartbeat' ? parseDuration(trigger.interval) : undefined;
    if (trigger.type !== 'heartbeat' || interval === undefined) return () => null;
    const beat = intervalAfter(since, interval);
    const window = trigger.window === undefined ? undefined : parseWindow(trigger.window);
    // A window is crossed within a day's beats.
    const beatsPerDay = Math.ceil((24 * 3600_000) / interval) + 1;
    return (after) => {
      let at = beat(after);
      for (let step = 0; window !== undefined && !inWindow(window, minuteOfDay(at, pkg.prepared.timezone, formatters)) && step < beatsPerDay; step += 1) at = beat(at);
      return at;
    };
  }

  /**
   * Per timed binding, the instants that passed since its last fire while `by` (the daemon was
   * down, no node led): those not caught up recorded as one missed run, and the rest run late, one
   * after the other, as `[scheduler].catch_up` says (decision 0046).
   */
  function recordMissed(pkg: ActivePackage, record: InstalledPackageRecord, by: string): void {
    for (const [name, binding] of Object.entries(pkg.prepared.loaded.agentJson.workflows)) {
      const { trigger } = binding;
      if (trigger.type !== 'schedule' && trigger.type !== 'heartbeat') continue;
      const since = record.lastFires[name] ?? record.installedAt;
      const now = clock.now();
      const plan = planCatchUp(instantsAfter(pkg, trigger, since), since, now, options.catchUp ?? DEFAULT_CATCH_UP, by);
      if (plan.skipped.length === 0 && plan.run.length === 0) continue;
      const catchUp = async (): Promise<void> => {
        for (const missed of plan.skipped) {
          const run = await recordNonRun(pkg, name, trigger.type, 'missed', missed.reason, missed.dueAt);
          publish({ type: 'package-miss', at: clock.now(), agentId: pkg.agentId, name: pkg.slug, binding: name, runId: run.id, trigger: trigger.type, count: missed.count, from: missed.dueAt, to: now });
        }
        await store.packages.setLastFire(pkg.slug, name, now);
        for (const at of plan.run) {
          if (active.get(pkg.slug) !== pkg) return;
          // Claimed as the timer would claim it: an instant another node fired is not run again.
          if (leadership !== undefined && !(await leadership.claim(`package ${pkg.slug}/${name}`, at))) continue;
          logger.info({ package: pkg.slug, binding: name, dueAt: at }, `catching up "${name}" of package "${pkg.slug}", due at ${new Date(at).toISOString()} while ${by}`);
          if (queue !== undefined) await enqueueRun(pkg.slug, name, trigger.type, {}, `package ${pkg.slug}/${name}@${at}`);
          else await fire(pkg.slug, name, trigger.type).catch((error: unknown) => logger.warn({ err: error, package: pkg.slug, binding: name }, `the late run of "${name}" (package "${pkg.slug}") did not complete`));
        }
      };
      track(catchUp()).catch((error: unknown) => logger.error({ err: error }, 'could not catch up missed fires'));
    }
  }

  function startTimers(pkg: ActivePackage): void {
    const timers = options.timers;
    if (timers === undefined) return;
    for (const [name, binding] of Object.entries(pkg.prepared.loaded.agentJson.workflows)) {
      const { trigger } = binding;
      if (trigger.type !== 'schedule' && trigger.type !== 'heartbeat') continue;
      const instants = trigger.type === 'schedule' ? cronInstants(trigger.cron, pkg.prepared.timezone, clock) : intervalInstants(parseDuration(trigger.interval) ?? 0, clock);
      const window = trigger.type === 'heartbeat' && trigger.window !== undefined ? parseWindow(trigger.window) : undefined;
      pkg.next.set(name, null);
      pkg.stops.push(
        timers.addTimer({
          name: `package ${pkg.slug}/${name}`,
          next: (previous) => {
            const at = instants(previous);
            pkg.next.set(name, at);
            return at;
          },
          fire: (at) => onTimer(pkg, name, trigger.type, window, at),
        }),
      );
    }
  }

  /** A heartbeat's next instant that falls inside its window (what a user wants to see), within a day. */
  function nextInWindow(pkg: ActivePackage, trigger: PackageTrigger, at: number | null): number | null {
    if (at === null || trigger.type !== 'heartbeat' || trigger.window === undefined) return at;
    const window = parseWindow(trigger.window);
    const interval = parseDuration(trigger.interval);
    if (window === undefined || interval === undefined) return at;
    for (let next = at; next < at + 24 * 3600_000 + interval; next += interval) {
      if (inWindow(window, minuteOfDay(next, pkg.prepared.timezone, formatters))) return next;
    }
    return null;
  }

  /** Starts the triggers of an installed package (nothing when it is active already or the runtime stopped). */
  async function activateRecord(record: InstalledPackageRecord): Promise<void> {
    const { slug } = record;
    if (active.has(slug) || controller.signal.aborted) return;
    let prepared: PreparedPackage;
    try {
      prepared = preparedFromRecord(record, environment);
    } catch (error) {
      logger.error({ err: error, package: slug }, `package "${slug}" cannot run with this configuration: ${error instanceof Error ? error.message : String(error)}`);
      return;
    }
    const pkg: ActivePackage = { slug, agentId: record.agentId, prepared, stops: [], next: new Map(), abort: new AbortController() };
    active.set(slug, pkg);
    rebuildSubscribers();
    startTimers(pkg);
    if (options.timers === undefined || (leadership !== undefined && !leadership.isLeader())) return;
    recordMissed(pkg, record, 'the daemon was down');
    // Each cut-off run is resumed once: taken out here, so a later reactivation (suspend and
    // resume, an update) does not run it again.
    for (const run of await resumable(await cutOffRuns(pkg))) resume(pkg, run);
  }

  const runtime: PackageRuntime = {
    name: 'packages',
    unasked: true,

    async activate(slug) {
      if (active.has(slug) || controller.signal.aborted) return;
      const record = await store.packages.get(slug);
      if (record !== undefined) await activateRecord(record);
    },

    deactivate(slug) {
      const pkg = active.get(slug);
      if (pkg === undefined) return;
      for (const stop of pkg.stops) stop();
      pkg.abort.abort(new Error(`stopped: package "${slug}" stopped (its agent was suspended, updated or removed) while the run was going`));
      active.delete(slug);
      rebuildSubscribers();
    },

    async run(slug, binding, inputs = {}) {
      const record = await store.packages.get(slug);
      if (record === undefined) throw new LoomError('PACKAGE_NOT_FOUND', 'user', `no package "${slug}" is installed; see: loom package list`);
      const pkg = active.get(slug);
      const names = pkg === undefined ? Object.keys(record.agentJson['workflows'] ?? {}) : [...pkg.prepared.bindings.keys()];
      if (!names.includes(binding)) throw new LoomError('BINDING_NOT_FOUND', 'user', `package "${slug}" has no binding "${binding}"; its bindings: ${names.join(', ')}`);
      return fire(slug, binding, 'manual', inputs);
    },

    async bindings(slug) {
      const record = await store.packages.get(slug);
      if (record === undefined) throw new LoomError('PACKAGE_NOT_FOUND', 'user', `no package "${slug}" is installed; see: loom package list`);
      const pkg = active.get(slug);
      const prepared = pkg?.prepared ?? preparedFromRecord(record, environment);
      return Object.entries(prepared.loaded.agentJson.workflows).map(([name, binding]) => ({
        name,
        description: binding.description,
        trigger: binding.trigger,
        nextFireAt: pkg === undefined ? null : nextInWindow(pkg, binding.trigger, pkg.next.get(name) ?? null),
        emit: binding.emit === undefined ? null : `${slug}.${binding.emit}`,
        sources: binding.trigger.type === 'event' && pkg !== undefined ? binding.trigger.sources.map((source) => resolveSource(pkg, source)) : binding.trigger.type === 'event' ? binding.trigger.sources : [],
        costEstimate: binding.budget.cost_estimate,
        totalPerRun: binding.budget.total_per_run,
        running: busy.has(keyOf(slug, name)),
      }));
    },

    isActive: (slug) => active.has(slug),

    async idle() {
      while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
    },

    async shutdown() {
      unsubscribe?.();
      stopSweep?.();
      controller.abort(new Error('the daemon is stopping'));
      for (const slug of [...active.keys()]) runtime.deactivate(slug);
      await runtime.idle();
    },

    // A package belongs to the agent its install spawned, as its record says. `[metadata] package`
    // is only what a manifest claims: whoever may spawn an agent may write it, so it neither starts
    // nor stops a package (else killing such a child would stop another agent's package).
    async start(agent: AgentEntry) {
      const record = (await store.packages.list()).find((installed) => installed.agentId === agent.id);
      if (record !== undefined) {
        await activateRecord(record);
        return;
      }
      const claimed = agent.manifest.metadata['package'];
      if (typeof claimed === 'string') {
        logger.debug({ agentId: agent.id, package: claimed }, `agent "${agent.name}" names package "${claimed}" in its metadata, but no installed package has it as its agent: nothing started`);
      }
    },

    stop(agent: AgentEntry) {
      for (const pkg of [...active.values()]) if (pkg.agentId === agent.id) runtime.deactivate(pkg.slug);
    },
  };
  return runtime;
}
