/**
 * The package runtime (spec/04 "AgentWorker Runtime"), a lifecycle hook of the kernel, composed
 * of its parts: `BindingRuns` (a binding's runs and the events they emit), `PackageTimers` (timed
 * triggers and their catch-up), `RunRecovery` (the runs a stop cut off), over one
 * `PackageRuntimeState`.
 */
import type { InstalledPackageRecord, JsonObject, PackageRunRecord } from '../contracts/index.ts';
import { LoomError } from '../errors/index.ts';
import type { AgentEntry, AgentLifecycleHook } from '../kernel/index.ts';
import { BindingRuns, resolveSource } from './binding-runs.ts';
import { type LoadedPackage, LoomTomlSchema } from './load-package.ts';
import { AgentJsonSchema, type PackageTrigger } from './package-schema.ts';
import { type ActivePackage, createPackageRuntimeState, type PackageRuntimeOptions } from './package-runtime-state.ts';
import { PackageTimers } from './package-timers.ts';
import { type PackageEnvironment, type PreparedPackage, preparePackage } from './prepare-package.ts';
import { RunRecovery } from './run-recovery.ts';

export type { PackageRuntimeOptions } from './package-runtime-state.ts';

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

/** Rebuilds a prepared package from what the store holds, against today's configuration. */
function preparedFromRecord(record: InstalledPackageRecord, environment: PackageEnvironment): PreparedPackage {
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

/** Creates the package runtime. Hand it to the kernel as a hook; the daemon gives it the scheduler. */
export function createPackageRuntime(options: PackageRuntimeOptions): PackageRuntime {
  const { store, environment } = options;
  const controller = new AbortController();
  const state = createPackageRuntimeState(options, controller.signal);
  const { active, logger } = state;
  const runs = new BindingRuns(state);
  const timers = new PackageTimers(state, runs);
  const recovery = new RunRecovery(state, { runs, timers });
  options.queue?.handle('package-run', (job, signal) => runs.runJob(job, signal));

  /** Starts the triggers of an installed package (nothing when it is active already or the runtime stopped). */
  async function activateRecord(record: InstalledPackageRecord): Promise<void> {
    const { slug } = record;
    if (active.has(slug) || controller.signal.aborted) return;
    let prepared: PreparedPackage;
    try {
      prepared = preparedFromRecord(record, environment);
    } catch (error) {
      logger.error(
        { err: error, package: slug },
        `package "${slug}" cannot run with this configuration: ${error instanceof Error ? error.message : String(error)}`,
      );
      return;
    }
    const pkg: ActivePackage = { slug, agentId: record.agentId, prepared, stops: [], next: new Map(), abort: new AbortController() };
    active.set(slug, pkg);
    runs.rebuildSubscribers();
    timers.start(pkg);
    const { leadership } = options;
    if (options.timers === undefined || (leadership !== undefined && !leadership.isLeader())) return;
    timers.recordMissed(pkg, record, 'the daemon was down');
    await recovery.resumeCutOff(pkg);
  }

  const eventSources = (pkg: ActivePackage | undefined, trigger: PackageTrigger): string[] =>
    trigger.type !== 'event' ? [] : pkg === undefined ? trigger.sources : trigger.sources.map((source) => resolveSource(pkg, source));

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
      runs.rebuildSubscribers();
    },

    async run(slug, binding, inputs: JsonObject = {}) {
      const record = await store.packages.get(slug);
      if (record === undefined) throw new LoomError('PACKAGE_NOT_FOUND', 'user', `no package "${slug}" is installed; see: loom package list`);
      const pkg = active.get(slug);
      const names = pkg === undefined ? Object.keys(record.agentJson['workflows'] ?? {}) : [...pkg.prepared.bindings.keys()];
      if (!names.includes(binding))
        throw new LoomError('BINDING_NOT_FOUND', 'user', `package "${slug}" has no binding "${binding}"; its bindings: ${names.join(', ')}`);
      return runs.fire({ slug, binding, trigger: 'manual', inputs });
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
        nextFireAt: pkg === undefined ? null : timers.nextInWindow(pkg, binding.trigger, pkg.next.get(name) ?? null),
        emit: binding.emit === undefined ? null : `${slug}.${binding.emit}`,
        sources: eventSources(pkg, binding.trigger),
        costEstimate: binding.budget.cost_estimate,
        totalPerRun: binding.budget.total_per_run,
        running: runs.isBusy(slug, name),
      }));
    },

    isActive: (slug) => active.has(slug),

    async idle() {
      await state.idle();
    },

    async shutdown() {
      recovery.close();
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
        logger.debug(
          { agentId: agent.id, package: claimed },
          `agent "${agent.name}" names package "${claimed}" in its metadata, but no installed package has it as its agent: nothing started`,
        );
      }
    },

    stop(agent: AgentEntry) {
      for (const pkg of [...active.values()]) if (pkg.agentId === agent.id) runtime.deactivate(pkg.slug);
    },
  };
  return runtime;
}
