import { realpathSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { Cron } from 'croner';
import { z } from 'zod';
import { globDirectory, matchesPattern } from '../capabilities/index.ts';
import type { ClaimedJob, Clock, Leadership, Logger, WorkQueue } from '../contracts/index.ts';
import { ConfigError } from '../errors/index.ts';
import {
  type AgentEntry,
  type AgentLifecycleHook,
  CONTINUOUS_WAKE_MESSAGE,
  type EventBus,
  periodicWakeMessage,
  type Wake,
  type WakeRuns,
} from '../kernel/index.ts';
import { DEFAULT_INTERVAL_SECONDS } from '../manifest/index.ts';
import { type CatchUpSettings, DEFAULT_CATCH_UP, planCatchUp } from './catch-up.ts';
import {
  type FileTriggerEvent,
  isFileTriggerEvent,
  isLifecycleTriggerEvent,
  LIFECYCLE_TRIGGER_EVENTS,
  type LifecycleTriggerEvent,
  SUPPORTED_TRIGGER_EVENTS,
} from './trigger-events.ts';
import { watchFilesWithNode, type WatchFiles } from './watch-files.ts';

export { CONTINUOUS_WAKE_MESSAGE };

/** The time zone cron expressions are read in when none is configured. */
export const DEFAULT_SCHEDULER_TIMEZONE = 'UTC';

/** What the scheduler needs. */
export interface SchedulerOptions {
  clock: Clock;
  logger: Logger;
  /**
   * Wakes agents and records each wake-up as a run (the kernel's `wakeRuns`): it skips a wake-up
   * while the agent's previous one still goes, and one a budget refuses, and records a run that
   * fails; wake-ups missed while the daemon was down are caught up by `catchUp`.
   */
  runs: Pick<WakeRuns, 'run' | 'skip' | 'catchUpSince' | 'interruptEarlier' | 'turnGoesOn'>;
  /** The daemon's `[scheduler].catch_up` settings, which an agent's `[schedule]` may override; {@link DEFAULT_CATCH_UP} by default. */
  catchUp?: CatchUpSettings | undefined;
  /** The kernel's event bus, for `agent_*` triggers. Without it those triggers are logged and skipped. */
  events?: EventBus | undefined;
  /** The file watcher for `file_*` triggers; {@link watchFilesWithNode} by default. */
  watch?: WatchFiles | undefined;
  /** The IANA time zone cron expressions are read in; `UTC` by default. */
  timezone?: string | undefined;
  /**
   * When several daemons share the store: the scheduler runs only while this node leads, and
   * claims each instant before it fires it. Without it this daemon is alone and always runs.
   */
  leadership?: Leadership | undefined;
  /**
   * When several daemons share the store: the shared work queue. Each wake-up is enqueued as a
   * `scheduled-message` job (an instant of a loop once only), which any node takes, and this node
   * delivers the wake-ups it takes. Without it they are delivered here.
   */
  queue?: WorkQueue | undefined;
}

/** What a `scheduled-message` job carries (`trigger`, `due` and `caughtUp` since runs are recorded). */
const ScheduledMessageJobSchema = z.strictObject({
  agent: z.string().min(1),
  message: z.string(),
  cause: z.string(),
  trigger: z.string().optional(),
  due: z.number().optional(),
  caughtUp: z.boolean().optional(),
});

/**
 * Timed work another subsystem hands the scheduler (a package binding's cron or heartbeat): the
 * scheduler sleeps on its clock until each instant `next` gives, then calls `fire`.
 */
export interface TimerSpec {
  /** Names the timer in logs, and its instants when they are claimed across daemons (keep it stable). */
  name: string;
  /** The next instant to fire at (epoch ms) after the previous one (undefined at first); null ends the timer. */
  next(previous: number | undefined): number | null;
  /** Called at each instant; must not throw (overlap and failures are the caller's to handle). */
  fire(at: number): void;
}

/**
 * The scheduler: a lifecycle hook that runs each agent's `[schedule]`, plus `stopAll`. With a
 * `leadership`, what it was given runs only while this node leads; it is kept, and started again
 * when the node leads again.
 */
export interface Scheduler extends AgentLifecycleHook {
  readonly name: 'scheduler';
  /** The IANA time zone cron expressions are read in (`[scheduler].timezone`). */
  readonly timezone: string;
  /** Starts a timer of another subsystem on the same clock; the function returned stops it. */
  addTimer(timer: TimerSpec): () => void;
  /** Ends every agent's loops, watchers and subscriptions, and every timer, as `stop` does for one. */
  stopAll(): void;
}

/**
 * The instants of a 5-field cron expression in `timezone`, as a {@link TimerSpec}'s `next`: the
 * first after the later of now and the previous one, so a clock waking a hair early never fires
 * twice. Daylight-saving gaps and repeats fire once (croner's rule).
 * @throws {Error} croner's, for an invalid expression (validate before).
 */
export function cronInstants(expression: string, timezone: string, clock: Clock): (previous: number | undefined) => number | null {
  const after = cronAfter(expression, timezone);
  return (previous) => after(Math.max(clock.now(), previous ?? Number.NEGATIVE_INFINITY));
}

/**
 * The first instant of a 5-field cron expression in `timezone` strictly after a given one (null when none is left).
 * @throws {Error} croner's, for an invalid expression (validate before).
 */
export function cronAfter(expression: string, timezone: string): (at: number) => number | null {
  const cron = new Cron(expression, { paused: true, timezone });
  return (at) => cron.nextRun(new Date(at))?.getTime() ?? null;
}

/** The first instant strictly after a given one of a cadence every `intervalMs` from `anchor`. */
export function intervalAfter(anchor: number, intervalMs: number): (at: number) => number {
  return (at) => anchor + (Math.floor((at - anchor) / intervalMs) + 1) * intervalMs;
}

/**
 * Instants every `intervalMs` from the first call (one interval after it), at a fixed cadence;
 * instants missed while the clock jumped are dropped, not queued.
 */
export function intervalInstants(intervalMs: number, clock: Clock): (previous: number | undefined) => number | null {
  return (previous) => {
    const now = clock.now();
    let due = (previous ?? now) + intervalMs;
    while (due <= now && previous !== undefined) due += intervalMs;
    return due;
  };
}

/** What one started agent holds: stopping aborts the signal and runs the cleanups. */
interface Activity {
  readonly controller: AbortController;
  readonly cleanups: (() => void)[];
}

type Trigger = AgentEntry['manifest']['schedule']['triggers'][number];

/** Whether `directory` exists and its real path differs from it (a symbolic link on the way). */
function leadsElsewhere(directory: string): boolean {
  try {
    return realpathSync(directory) !== directory;
  } catch {
    return false; // not there: watching it fails and says so
  }
}

/**
 * Creates the scheduler (spec/01 "Scheduling Modes"). On `start(agent)` it begins what the
 * agent's `[schedule]` asks for: nothing for `reactive`; a wake-up every `interval_seconds` for
 * `continuous`; a wake-up at each time of the `cron` expression (in `timezone`) for `periodic`;
 * a message per matching file or lifecycle event for `proactive`. `stop(agent)` ends all of it
 * at once. Each wake-up goes through `runs`, which records it and never lets runs of one agent
 * overlap (a wake-up due while the previous run still goes is skipped, so nothing queues up); a
 * wake-up that cannot be run is logged, and the schedule goes on.
 *
 * The manifest refuses an unknown trigger event, a `file_*` trigger without a pattern and a
 * `proactive` schedule without triggers at load; here they would be logged and skipped.
 *
 * With `leadership` (several daemons on one database), all of it runs only while this node leads
 * and stops the moment it no longer does; each instant of a loop or timer fires only once claimed
 * (so a new leader never repeats one the old leader fired).
 *
 * @throws {ConfigError} when `timezone` is not a time zone this runtime knows.
 * @example
 * ```ts
 * const scheduler = createScheduler({ clock, logger, runs: kernel.wakeRuns });
 * kernel.addHook(scheduler); // src/host/open-host.ts: started and stopped with each agent
 * ```
 */
export function createScheduler(options: SchedulerOptions): Scheduler {
  const { clock, events, runs } = options;
  const catchUpDefaults = options.catchUp ?? DEFAULT_CATCH_UP;
  const timezone = options.timezone ?? DEFAULT_SCHEDULER_TIMEZONE;
  assertTimeZone(timezone);
  const watchFiles = options.watch ?? watchFilesWithNode;
  const baseLogger = options.logger.child({ subsystem: 'scheduler' });
  const { leadership, queue } = options;
  // Every agent started and not stopped; `active` holds those running here now (all of them
  // while this node leads, none otherwise).
  const started = new Map<string, AgentEntry>();
  const active = new Map<string, Activity>();

  /**
   * Wakes the agent, here or (with a queue) on whichever node takes the job; `dedupeKey` names a
   * loop's instant. Resolves when the wake-up has ended here (or is enqueued); never rejects.
   */
  async function wake(agent: AgentEntry, due: Wake, signal: AbortSignal, logger: Logger, dedupeKey?: string): Promise<void> {
    if (signal.aborted) return;
    const { cause } = due;
    if (queue !== undefined) {
      const payload = {
        agent: agent.id,
        message: due.message,
        cause,
        trigger: due.trigger,
        due: due.dueAt,
        ...(due.caughtUp === true ? { caughtUp: true } : {}),
      };
      await queue
        .enqueue({ kind: 'scheduled-message', payload, dedupeKey })
        .catch((error: unknown) => logger.error({ err: error, cause }, `could not enqueue a wake-up of agent "${agent.name}" (${cause}): it does not run`));
      return;
    }
    try {
      await runs.run(agent.id, due);
    } catch (error) {
      // A failed turn or a budget's refusal is a run `runs` records: this is one it could not make.
      logger.error({ err: error, cause }, `could not wake agent "${agent.name}" (${cause})`);
    }
  }

  /**
   * Runs a `scheduled-message` job this node took. A run that could not be made (an agent this
   * node does not know, spawned on another node since it started) fails the job: another attempt, maybe elsewhere.
   */
  async function deliverJob(job: ClaimedJob): Promise<void> {
    const parsed = ScheduledMessageJobSchema.safeParse(job.payload);
    if (!parsed.success) throw new Error(`cannot run job "${job.id}": its payload is not a scheduled message (${parsed.error.message})`);
    const { agent, message, cause } = parsed.data;
    const due: Wake = { trigger: parsed.data.trigger ?? cause, cause, message, dueAt: parsed.data.due ?? clock.now(), caughtUp: parsed.data.caughtUp };
    // Taken again: an earlier attempt's node died (or lost the job) while it ran; its run is not going on any more.
    if (job.attempt > 1 && parsed.data.due !== undefined) {
      await runs.interruptEarlier(agent, due);
      // Its turn was recorded when accepted: it goes on from its journal on the node that takes its lease over.
      if (await runs.turnGoesOn(agent, due)) {
        await runs.skip(agent, due, 'the turn an earlier attempt began goes on from its journal, where its node stopped; the wake-up is not run twice');
        return;
      }
    }
    await runs.run(agent, due);
  }
  queue?.handle('scheduled-message', deliverJob);

  /** Whether this node may fire the instant `at` of `key`: always when alone, else when the cluster grants the claim. */
  async function claim(key: string, at: number, logger: Logger): Promise<boolean> {
    if (leadership === undefined) return true;
    try {
      if (await leadership.claim(key, at)) return true;
      logger.debug({ key, at }, `did not fire ${key} at ${new Date(at).toISOString()}: another node fired it, or this node no longer leads`);
    } catch (error) {
      logger.warn({ err: error, key, at }, `did not fire ${key} at ${new Date(at).toISOString()}: the instant could not be claimed`);
    }
    return false;
  }

  /**
   * Sleeps until each instant `next` gives (null ends the loop), then calls `tick` with it; stops
   * on abort. With a leadership, an instant fires only once claimed under `key`.
   */
  function loop(
    signal: AbortSignal,
    key: string,
    next: (previous: number | undefined) => number | null,
    tick: (at: number, key: string) => void,
    logger: Logger,
  ): void {
    const run = async (): Promise<void> => {
      let previous: number | undefined;
      for (;;) {
        const at = next(previous);
        if (at === null) return;
        try {
          await clock.sleep(Math.max(0, at - clock.now()), { signal });
        } catch (error) {
          if (signal.aborted) return;
          throw error;
        }
        if (signal.aborted) return;
        previous = at;
        // Alone, the tick follows the sleep synchronously, as it always has.
        if (leadership !== undefined && (!(await claim(key, at, logger)) || signal.aborted)) continue;
        tick(at, key);
      }
    };
    run().catch((error: unknown) => logger.error({ err: error }, 'a schedule loop stopped on an error'));
  }

  /**
   * Catches up the wake-ups the schedule passed while the daemon was down: from the later of its
   * last recorded instant and the last change of the agent or an agent above it (a suspended agent
   * misses nothing) up to now, by `[schedule].catch_up` (else the daemon's); each one run or
   * skipped is recorded.
   */
  async function catchUp(
    agent: AgentEntry,
    after: (since: number) => (at: number) => number | null,
    dueAt: (at: number) => Wake,
    key: string,
    signal: AbortSignal,
    logger: Logger,
  ): Promise<void> {
    const now = clock.now();
    const since = await runs.catchUpSince(agent.id);
    const { schedule } = agent.manifest;
    const settings: CatchUpSettings = {
      policy: schedule.catch_up ?? catchUpDefaults.policy,
      windowSeconds: schedule.catch_up_window_seconds ?? catchUpDefaults.windowSeconds,
    };
    const plan = planCatchUp(after(since), since, now, settings);
    for (const skipped of plan.skipped) {
      if (signal.aborted) return;
      const due = dueAt(skipped.dueAt);
      logger.warn({ cause: due.cause, count: skipped.count }, `skipped ${skipped.count} wake-up(s) of agent "${agent.name}" (${due.cause}): ${skipped.reason}`);
      await runs.skip(agent.id, { ...due, count: skipped.count }, skipped.reason);
    }
    for (const at of plan.run) {
      logger.info(
        { cause: dueAt(at).cause, dueAt: at },
        `catching up a wake-up of agent "${agent.name}" due at ${new Date(at).toISOString()} while the daemon was down`,
      );
      await wake(agent, { ...dueAt(at), caughtUp: true }, signal, logger, `${key}@${at}`);
    }
  }

  function startContinuous(agent: AgentEntry, activity: Activity, logger: Logger): void {
    const intervalMs = (agent.manifest.schedule.interval_seconds ?? DEFAULT_INTERVAL_SECONDS) * 1000;
    const { signal } = activity.controller;
    const key = `agent ${agent.id} continuous`;
    const dueAt = (at: number): Wake => ({ trigger: 'continuous', cause: 'continuous', message: CONTINUOUS_WAKE_MESSAGE, dueAt: at });
    loop(signal, key, intervalInstants(intervalMs, clock), (at) => void wake(agent, dueAt(at), signal, logger, `${key}@${at}`), logger);
    catchUp(agent, (since) => intervalAfter(since, intervalMs), dueAt, key, signal, logger).catch((error: unknown) =>
      logger.error({ err: error }, `could not catch up the wake-ups of agent "${agent.name}" missed while the daemon was down`),
    );
  }

  function startPeriodic(agent: AgentEntry, activity: Activity, logger: Logger): void {
    const expression = agent.manifest.schedule.cron;
    if (expression === undefined) {
      logger.error({}, `cannot schedule agent "${agent.name}": mode = "periodic" needs a cron expression`);
      return;
    }
    let next: (previous: number | undefined) => number | null;
    try {
      next = cronInstants(expression, timezone, clock);
    } catch (error) {
      logger.error({ err: error, cron: expression }, `cannot schedule agent "${agent.name}": invalid cron expression "${expression}"`);
      return;
    }
    const { signal } = activity.controller;
    const key = `agent ${agent.id} cron`;
    const dueAt = (at: number): Wake => ({ trigger: 'cron', cause: `cron "${expression}"`, message: periodicWakeMessage(expression, timezone), dueAt: at });
    loop(signal, key, next, (at) => void wake(agent, dueAt(at), signal, logger, `${key}@${at}`), logger);
    catchUp(agent, () => cronAfter(expression, timezone), dueAt, key, signal, logger).catch((error: unknown) =>
      logger.error({ err: error }, `could not catch up the wake-ups of agent "${agent.name}" missed while the daemon was down`),
    );
  }

  function startFileTrigger(agent: AgentEntry, trigger: Trigger, event: FileTriggerEvent, activity: Activity, logger: Logger): void {
    const { pattern } = trigger;
    if (pattern === undefined) {
      logger.error({ trigger: event }, `skipped trigger "${event}" of agent "${agent.name}": it needs a pattern, e.g. pattern = "/data/inbox/*.json"`);
      return;
    }
    const directory = globDirectory(pattern);
    // A child's trigger was judged, and pinned, by its folder's real path when it was spawned: a
    // symbolic link put in that place since (or a folder that did not exist then, made a link)
    // leads where its parent may not read.
    if (agent.parentId !== null && isAbsolute(directory) && leadsElsewhere(directory)) {
      logger.error(
        { trigger: event, directory },
        `skipped trigger "${event}" of agent "${agent.name}": "${directory}" is now a symbolic link (or lies under one), and a child agent's triggers watch only the folder they were judged by; spawn it again to have the folder judged anew`,
      );
      return;
    }
    const { signal } = activity.controller;
    const seen = new Set<string>();
    try {
      const unwatch = watchFiles(
        directory,
        (path, exists) => {
          if (!matchesPattern(pattern, path)) return;
          if (!exists) {
            seen.delete(path);
            return;
          }
          const created = !seen.has(path);
          seen.add(path);
          if (created !== (event === 'file_created')) return;
          void wake(
            agent,
            { trigger: event, cause: `${event} ${path}`, message: trigger.message ?? `[trigger] ${event}: ${path}`, dueAt: clock.now() },
            signal,
            logger,
          );
        },
        (error) => logger.error({ err: error, directory }, `the watcher on "${directory}" for agent "${agent.name}" failed`),
      );
      activity.cleanups.push(unwatch);
    } catch (error) {
      logger.error({ err: error, directory }, `skipped trigger "${event}" of agent "${agent.name}": cannot watch "${directory}"`);
    }
  }

  function startLifecycleTrigger(agent: AgentEntry, trigger: Trigger, event: LifecycleTriggerEvent, activity: Activity, logger: Logger): void {
    if (events === undefined) {
      logger.warn({ trigger: event }, `skipped trigger "${event}" of agent "${agent.name}": the scheduler has no event bus`);
      return;
    }
    const type = LIFECYCLE_TRIGGER_EVENTS[event];
    const { pattern } = trigger;
    const { signal } = activity.controller;
    const unsubscribe = events.subscribe((kernelEvent) => {
      if (kernelEvent.type !== type) return;
      // An agent hearing of its own resume (its hook starts just before the event) is noise.
      if (kernelEvent.agentId === agent.id) return;
      if (pattern !== undefined && !matchesPattern(pattern, kernelEvent.name)) return;
      const message = trigger.message ?? `[trigger] ${event}: agent "${kernelEvent.name}" (${kernelEvent.agentId})`;
      void wake(agent, { trigger: event, cause: `${event} ${kernelEvent.name}`, message, dueAt: clock.now() }, signal, logger);
    });
    activity.cleanups.push(unsubscribe);
  }

  function startProactive(agent: AgentEntry, activity: Activity, logger: Logger): void {
    for (const trigger of agent.manifest.schedule.triggers) {
      const { event } = trigger;
      if (isFileTriggerEvent(event)) startFileTrigger(agent, trigger, event, activity, logger);
      else if (isLifecycleTriggerEvent(event)) startLifecycleTrigger(agent, trigger, event, activity, logger);
      else {
        // The manifest refuses any other event at load; a stored one is kept out the same way.
        logger.warn(
          { trigger: event },
          `skipped trigger "${event}" of agent "${agent.name}": unknown event; expected one of ${SUPPORTED_TRIGGER_EVENTS.join(', ')}`,
        );
      }
    }
  }

  function stopAgent(agentId: string): void {
    const activity = active.get(agentId);
    if (activity === undefined) return;
    active.delete(agentId);
    activity.controller.abort();
    for (const cleanup of activity.cleanups) {
      try {
        cleanup();
      } catch (error) {
        baseLogger.error({ err: error, agentId }, 'a schedule cleanup failed');
      }
    }
  }

  /** Every timer added and not stopped, with the controller of its loop while it runs here. */
  const timers = new Map<TimerSpec, AbortController | undefined>();

  const leads = (): boolean => leadership === undefined || leadership.isLeader();

  function startTimer(timer: TimerSpec): void {
    const controller = new AbortController();
    timers.set(timer, controller);
    const logger = baseLogger.child({ timer: timer.name });
    loop(
      controller.signal,
      timer.name,
      (previous) => timer.next(previous),
      (at) => timer.fire(at),
      logger,
    );
  }

  function startAgent(agent: AgentEntry): void {
    if (active.has(agent.id)) return;
    const { mode } = agent.manifest.schedule;
    if (mode === 'reactive') return;
    const activity: Activity = { controller: new AbortController(), cleanups: [] };
    active.set(agent.id, activity);
    const logger = baseLogger.child({ agentId: agent.id });
    switch (mode) {
      case 'continuous':
        startContinuous(agent, activity, logger);
        break;
      case 'periodic':
        startPeriodic(agent, activity, logger);
        break;
      case 'proactive':
        startProactive(agent, activity, logger);
        break;
    }
  }

  // Leading starts what was given; no longer leading stops it at once (and keeps it for the next time).
  const unsubscribe = leadership?.subscribe((leader) => {
    if (leader) {
      for (const agent of started.values()) startAgent(agent);
      for (const [timer, controller] of timers) if (controller === undefined) startTimer(timer);
      return;
    }
    for (const agentId of [...active.keys()]) stopAgent(agentId);
    for (const [timer, controller] of timers) {
      controller?.abort();
      timers.set(timer, undefined);
    }
  });

  return {
    name: 'scheduler',
    unasked: true,
    timezone,
    addTimer(timer) {
      timers.set(timer, undefined);
      if (leads()) startTimer(timer);
      return () => {
        timers.get(timer)?.abort();
        timers.delete(timer);
      };
    },
    start(agent) {
      started.set(agent.id, agent);
      if (leads()) startAgent(agent);
    },
    stop(agent) {
      started.delete(agent.id);
      stopAgent(agent.id);
    },
    stopAll() {
      unsubscribe?.();
      started.clear();
      for (const agentId of [...active.keys()]) stopAgent(agentId);
      for (const controller of timers.values()) controller?.abort();
      timers.clear();
    },
  };
}

function assertTimeZone(timezone: string): void {
  // UTC needs no check, and checking loads the locale data (several MB) into an idle daemon.
  if (timezone === 'UTC') return;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
  } catch (error) {
    throw new ConfigError(`cannot create the scheduler: unknown time zone "${timezone}"; use an IANA name such as "Europe/Paris"`, {
      cause: error,
      details: { timezone },
    });
  }
}
