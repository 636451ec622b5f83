/**
 * `RunRecovery`: the runs a stop cut off, resumed (their finished activities not run again). At
 * the daemon's start, runs still marked running are marked interrupted and resumed as their
 * packages activate; a node that takes over as leader does the same for the last leader's, and
 * records what its timers missed; while other nodes live, the leader looks for the runs of nodes
 * that died every {@link ORPHAN_SWEEP_MS}. One recovery runs at a time.
 */
import type { PackageRunRecord } from '../contracts/index.ts';
import { intervalInstants } from '../scheduler/index.ts';
import type { BindingRuns } from './binding-runs.ts';
import type { PackageTimers } from './package-timers.ts';
import { type ActivePackage, failRunningActivities, INTERRUPTED, type PackageRuntimeState } from './package-runtime-state.ts';

/** How often the leader looks for runs whose node died, when nodes share the store. */
const ORPHAN_SWEEP_MS = 10_000;

/** The package runtime's recovery of cut-off runs. */
export class RunRecovery {
  readonly #state: PackageRuntimeState;
  readonly #runs: BindingRuns;
  readonly #timers: PackageTimers;
  /** The daemon's start: runs its last stop cut off, resumed as their packages activate. */
  #interrupted: Promise<Map<string, PackageRunRecord[]>> | undefined;
  /** Whether this node was alone when it began to lead (decided once per leadership). */
  #alone: Promise<boolean> | undefined;
  /** One recovery at a time: two would both find a run cut off, and resume it twice. */
  #recovering: Promise<void> = Promise.resolve();
  #led: boolean;
  readonly #unsubscribe: (() => void) | undefined;
  readonly #stopSweep: (() => void) | undefined;

  /** Starts the orphan sweep (nodes sharing the store, with a scheduler) and follows the leadership. */
  constructor(state: PackageRuntimeState, parts: { runs: BindingRuns; timers: PackageTimers }) {
    this.#state = state;
    this.#runs = parts.runs;
    this.#timers = parts.timers;
    const { node, timers, clock, leadership } = state.options;
    this.#stopSweep =
      node === undefined || timers === undefined
        ? undefined
        : timers.addTimer({
            name: 'package runs/orphans',
            next: intervalInstants(ORPHAN_SWEEP_MS, clock),
            fire: () => this.#recover(() => this.#sweepOrphans(), 'could not resume the package runs of a node that died'),
          });
    this.#led = leadership?.isLeader() ?? true;
    this.#unsubscribe = leadership?.subscribe((leader) => {
      const tookOver = leader && !this.#led;
      this.#led = leader;
      if (!tookOver || timers === undefined || state.stopped.aborted) return;
      this.#recover(() => this.#takeOver(), 'could not take over the timed work of the last leader');
    });
  }

  /**
   * Resumes the package's runs cut off by the last stop. Each is resumed once: taken out here, so
   * a later reactivation (suspend and resume, an update) does not run it again.
   */
  async resumeCutOff(pkg: ActivePackage): Promise<void> {
    for (const run of await this.#resumable(await this.#cutOffRuns(pkg))) this.#resume(pkg, run);
  }

  /** Stops following the leadership and sweeping. */
  close(): void {
    this.#unsubscribe?.();
    this.#stopSweep?.();
  }

  #recover(work: () => Promise<void>, what: string): void {
    this.#recovering = this.#recovering.then(work).catch((error: unknown) => this.#state.logger.error({ err: error }, what));
  }

  /** Every run still marked running, marked interrupted (at most once per leadership), by package. */
  #interruptedRuns(): Promise<Map<string, PackageRunRecord[]>> {
    const { store, clock } = this.#state.options;
    this.#interrupted ??= (async () => {
      const byPackage = new Map<string, PackageRunRecord[]>();
      const runs = (await store.packageRuns.interruptRunning(clock.now(), INTERRUPTED)).filter((run) => !this.#runs.isRunningHere(run.id));
      for (const run of runs) byPackage.set(run.package, [...(byPackage.get(run.package) ?? []), run]);
      if (runs.length > 0)
        this.#state.logger.warn({ runs: runs.map((run) => run.id) }, `${runs.length} package run(s) were cut off by the last stop; resuming them`);
      return byPackage;
    })();
    return this.#interrupted;
  }

  /**
   * The package's runs still marked running whose node is gone, marked interrupted: with other
   * nodes alive, a run of a live node is its own. A run that records no node (from before nodes
   * were recorded) counts as gone when it is a timed trigger's, which only a leader starts.
   */
  async #interruptOrphanedRuns(pkg: ActivePackage): Promise<PackageRunRecord[]> {
    const { store, clock, node } = this.#state.options;
    const runs: PackageRunRecord[] = [];
    const timed = (trigger: string): boolean => trigger === 'schedule' || trigger === 'heartbeat';
    const orphaned = async (run: PackageRunRecord): Promise<boolean> =>
      run.nodeId === null ? timed(run.trigger) : run.nodeId !== node?.id && !((await node?.alive(run.nodeId)) ?? false);
    for (const name of Object.keys(pkg.prepared.loaded.agentJson.workflows)) {
      for (const run of await store.packageRuns.list({ package: pkg.slug, binding: name, limit: 100 })) {
        if (run.status !== 'running' || this.#runs.isRunningHere(run.id) || !(await orphaned(run))) continue;
        const now = clock.now();
        const cut: PackageRunRecord = {
          ...run,
          status: 'interrupted',
          error: INTERRUPTED,
          endedAt: now,
          activities: failRunningActivities(run.activities, INTERRUPTED, now),
        };
        await store.packageRuns.update(cut);
        runs.push(cut);
      }
    }
    if (runs.length > 0)
      this.#state.logger.warn(
        { runs: runs.map((run) => run.id) },
        `${runs.length} run(s) of package "${pkg.slug}" were cut off when their node stopped; resuming them`,
      );
    return runs;
  }

  /**
   * The package's runs cut off by the last stop (of this daemon, or of the leader this node took
   * over from), marked interrupted, each given once. Alone, every run still marked running; while
   * other nodes live, only those of the package's timed triggers (which only a leader starts: the
   * others' manual runs may still be going). Never a run going here.
   */
  async #cutOffRuns(pkg: ActivePackage): Promise<PackageRunRecord[]> {
    const { leadership } = this.#state.options;
    this.#alone ??= leadership === undefined ? Promise.resolve(true) : leadership.othersAlive().then((others) => !others);
    if (!(await this.#alone)) return this.#interruptOrphanedRuns(pkg);
    const pending = await this.#interruptedRuns();
    const runs = pending.get(pkg.slug) ?? [];
    pending.delete(pkg.slug);
    return runs;
  }

  /** The runs cut off, less those of jobs: the queue runs those again itself (on whichever node takes them). */
  async #resumable(runs: PackageRunRecord[]): Promise<PackageRunRecord[]> {
    const { queue } = this.#state.options;
    if (queue === undefined || runs.length === 0) return runs;
    const jobs = await queue.jobIds(runs.map((run) => run.id));
    return runs.filter((run) => !jobs.has(run.id));
  }

  #resume(pkg: ActivePackage, run: PackageRunRecord): void {
    if (!pkg.prepared.bindings.has(run.binding)) return;
    this.#runs
      .fire({ slug: pkg.slug, binding: run.binding, trigger: run.trigger, resume: run })
      .catch((error: unknown) => this.#state.logger.error({ err: error, package: pkg.slug, run: run.id }, `resumed run "${run.id}" failed`));
  }

  /** A node that takes over as leader: what the last leader's timers missed, and the runs it left cut off. */
  async #takeOver(): Promise<void> {
    this.#interrupted = undefined;
    this.#alone = undefined;
    const { active } = this.#state;
    for (const pkg of [...active.values()]) {
      const record = await this.#state.options.store.packages.get(pkg.slug);
      if (record === undefined || active.get(pkg.slug) !== pkg) continue;
      this.#timers.recordMissed(pkg, record, 'no node led');
      await this.resumeCutOff(pkg);
    }
  }

  /**
   * With nodes sharing the store, the leader looks for runs whose node died every
   * {@link ORPHAN_SWEEP_MS} (a node is gone once its heartbeat is 10 s old), and resumes them.
   */
  async #sweepOrphans(): Promise<void> {
    const { active } = this.#state;
    for (const pkg of [...active.values()]) {
      for (const run of await this.#resumable(await this.#interruptOrphanedRuns(pkg))) if (active.get(pkg.slug) === pkg) this.#resume(pkg, run);
    }
  }
}
