/**
 * What the parts of the package runtime share: its options, its logger, the packages whose
 * triggers run, the runtime's stop signal, and the runs in flight (one explicit record, handed to
 * each part, in place of a closure's hidden state).
 */
import type { ActivityRunRecord, Clock, IdGenerator, JsonObject, Leadership, Logger, PackageRunRecord, Store, WorkQueue } from '../contracts/index.ts';
import type { Kernel, PackageEvent } from '../kernel/index.ts';
import type { CatchUpSettings, TimerSpec } from '../scheduler/index.ts';
import type { PackageEnvironment, PreparedPackage } from './prepare-package.ts';

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
   * `DEFAULT_CATCH_UP` (`once`) by default.
   */
  catchUp?: CatchUpSettings | undefined;
}

/** A package whose triggers run. */
export interface ActivePackage {
  slug: string;
  agentId: string;
  prepared: PreparedPackage;
  stops: (() => void)[];
  /** The next instant of each timed binding. */
  next: Map<string, number | null>;
  /** Aborted when the package stops (its agent suspended, updated or killed): its runs stop with it. */
  abort: AbortController;
}

/** How a binding is fired: by its trigger, a manual run, an event, a resumed run or a queue's job. */
export interface FireRequest {
  slug: string;
  binding: string;
  /** `manual`, `schedule`, `heartbeat` or `event:<name>`. */
  trigger: string;
  /** Merged over the binding's own inputs (an event's output). */
  inputs?: JsonObject | undefined;
  /** A run cut off earlier, resumed with the inputs it started with (its finished activities kept). */
  resume?: PackageRunRecord | undefined;
  /** A queue's job: its run has the job's id and stops when the job's signal aborts. */
  job?: { id: string; signal: AbortSignal } | undefined;
}

/** Fires a binding; resolves when its run ends. */
export type FireBinding = (request: FireRequest) => Promise<PackageRunRecord>;

/** The state the package runtime's parts share. */
export interface PackageRuntimeState {
  readonly options: PackageRuntimeOptions;
  /** The runtime's logger (`subsystem: packages`). */
  readonly logger: Logger;
  /** The packages whose triggers run, by slug. */
  readonly active: Map<string, ActivePackage>;
  /** Aborted when the runtime shuts down (the daemon stops): runs cut off so resume at the next start. */
  readonly stopped: AbortSignal;
  /** Records a package event in the log (a failure is logged, never thrown). */
  publish(event: PackageEvent): void;
  /** Counts a promise among the work in flight until it settles. */
  track<T>(promise: Promise<T>): Promise<T>;
  /** Resolves when no work is in flight (work started meanwhile included). */
  idle(): Promise<void>;
}

/** The state the runtime's parts share, made once from its options; `stopped` aborts when the runtime shuts down. */
export function createPackageRuntimeState(options: PackageRuntimeOptions, stopped: AbortSignal): PackageRuntimeState {
  const logger = options.logger.child({ subsystem: 'packages' });
  const inFlight = new Set<Promise<unknown>>();
  return {
    options,
    logger,
    active: new Map<string, ActivePackage>(),
    stopped,
    publish: (event: PackageEvent): void => {
      options.kernel.publish(event).catch((error: unknown) => logger.error({ err: error, eventType: event.type }, 'could not record a package event'));
    },
    track: <T>(promise: Promise<T>): Promise<T> => {
      inFlight.add(promise);
      const remove = (): void => {
        inFlight.delete(promise);
      };
      promise.then(remove, remove);
      return promise;
    },
    idle: async (): Promise<void> => {
      while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
    },
  };
}

/** The error a run cut off by a stop is marked with. */
export const INTERRUPTED = 'interrupted: the daemon stopped while the run was going';

/** A run's activities with the one under way marked failed with `error` at `now`. */
export function failRunningActivities(activities: readonly ActivityRunRecord[], error: string, now: number): ActivityRunRecord[] {
  return activities.map((activity) => (activity.status === 'running' ? { ...activity, status: 'failed' as const, error, endedAt: now } : activity));
}

/** The key of a binding in sets and maps. */
export const bindingKey = (slug: string, binding: string): string => `${slug}\u0000${binding}`;
