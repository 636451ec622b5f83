/**
 * `PackageTimers`: the schedule and heartbeat triggers of active packages on the one scheduler
 * (a heartbeat fires only inside its window), the next instant a user sees, and the catch-up of
 * the instants passed while nothing fired (decision 0046).
 */
import type { InstalledPackageRecord } from '../contracts/index.ts';
import { LoomError } from '../errors/index.ts';
import { cronAfter, cronInstants, DEFAULT_CATCH_UP, intervalAfter, intervalInstants, planCatchUp } from '../scheduler/index.ts';
import type { BindingRuns } from './binding-runs.ts';
import { type ClockWindow, inWindow, type PackageTrigger, parseDuration, parseWindow } from './package-schema.ts';
import type { ActivePackage, PackageRuntimeState } from './package-runtime-state.ts';
import { recordNonRun } from './run-records.ts';

/** One instant of a timed binding. */
interface TimerFire {
  pkg: ActivePackage;
  binding: string;
  trigger: string;
  /** A heartbeat's window: an instant outside it does not fire. */
  window: ClockWindow | undefined;
  at: number;
}

/** The timed triggers of the active packages. */
export class PackageTimers {
  readonly #state: PackageRuntimeState;
  readonly #runs: BindingRuns;
  /** Time formatters, one per zone. */
  readonly #formatters = new Map<string, Intl.DateTimeFormat>();

  constructor(state: PackageRuntimeState, runs: BindingRuns) {
    this.#state = state;
    this.#runs = runs;
  }

  /** Puts the package's schedule and heartbeat triggers on the scheduler (nothing without one); they stop with `pkg.stops`. */
  start(pkg: ActivePackage): void {
    const { timers, clock } = this.#state.options;
    if (timers === undefined) return;
    for (const [name, binding] of Object.entries(pkg.prepared.loaded.agentJson.workflows)) {
      const { trigger } = binding;
      if (trigger.type !== 'schedule' && trigger.type !== 'heartbeat') continue;
      const instants =
        trigger.type === 'schedule' ? cronInstants(trigger.cron, pkg.prepared.timezone, clock) : intervalInstants(parseDuration(trigger.interval) ?? 0, clock);
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
          fire: (at) => this.#onTimer({ pkg, binding: name, trigger: trigger.type, window, at }),
        }),
      );
    }
  }

  /** A heartbeat's next instant that falls inside its window (what a user wants to see), within a day. */
  nextInWindow(pkg: ActivePackage, trigger: PackageTrigger, at: number | null): number | null {
    if (at === null || trigger.type !== 'heartbeat' || trigger.window === undefined) return at;
    const window = parseWindow(trigger.window);
    const interval = parseDuration(trigger.interval);
    if (window === undefined || interval === undefined) return at;
    for (let next = at; next < at + 24 * 3600_000 + interval; next += interval) {
      if (inWindow(window, this.#minuteOfDay(next, pkg.prepared.timezone))) return next;
    }
    return null;
  }

  /**
   * Per timed binding, the instants that passed since its last fire while `by` (the daemon was
   * down, no node led): those not caught up recorded as one missed run, and the rest run late, one
   * after the other, as `[scheduler].catch_up` says (decision 0046).
   */
  recordMissed(pkg: ActivePackage, record: InstalledPackageRecord, by: string): void {
    const state = this.#state;
    const { clock, store, leadership, queue } = state.options;
    const { logger } = state;
    for (const [name, binding] of Object.entries(pkg.prepared.loaded.agentJson.workflows)) {
      const { trigger } = binding;
      if (trigger.type !== 'schedule' && trigger.type !== 'heartbeat') continue;
      const since = record.lastFires[name] ?? record.installedAt;
      const now = clock.now();
      const plan = planCatchUp(this.#instantsAfter(pkg, trigger, since), since, now, state.options.catchUp ?? DEFAULT_CATCH_UP, by);
      if (plan.skipped.length === 0 && plan.run.length === 0) continue;
      const catchUp = async (): Promise<void> => {
        for (const missed of plan.skipped) {
          const run = await recordNonRun(state, { pkg, binding: name, trigger: trigger.type, status: 'missed', error: missed.reason, from: missed.dueAt });
          state.publish({
            type: 'package-miss',
            at: clock.now(),
            agentId: pkg.agentId,
            name: pkg.slug,
            binding: name,
            runId: run.id,
            trigger: trigger.type,
            count: missed.count,
            from: missed.dueAt,
            to: now,
          });
        }
        await store.packages.setLastFire(pkg.slug, name, now);
        for (const at of plan.run) {
          if (state.active.get(pkg.slug) !== pkg) return;
          // Claimed as the timer would claim it: an instant another node fired is not run again.
          if (leadership !== undefined && !(await leadership.claim(`package ${pkg.slug}/${name}`, at))) continue;
          logger.info(
            { package: pkg.slug, binding: name, dueAt: at },
            `catching up "${name}" of package "${pkg.slug}", due at ${new Date(at).toISOString()} while ${by}`,
          );
          if (queue !== undefined)
            await this.#runs.enqueue({ slug: pkg.slug, binding: name, trigger: trigger.type, inputs: {}, dedupeKey: `package ${pkg.slug}/${name}@${at}` });
          else
            await this.#runs
              .fire({ slug: pkg.slug, binding: name, trigger: trigger.type })
              .catch((error: unknown) =>
                logger.warn({ err: error, package: pkg.slug, binding: name }, `the late run of "${name}" (package "${pkg.slug}") did not complete`),
              );
        }
      };
      state.track(catchUp()).catch((error: unknown) => logger.error({ err: error }, 'could not catch up missed fires'));
    }
  }

  /**
   * The trigger's first instant strictly after a given one (null when none is left): a cron
   * time, or a heartbeat's beat every interval from `since` that falls inside its window.
   */
  #instantsAfter(pkg: ActivePackage, trigger: PackageTrigger, since: number): (at: number) => number | null {
    if (trigger.type === 'schedule') return cronAfter(trigger.cron, pkg.prepared.timezone);
    const interval = trigger.type === 'heartbeat' ? parseDuration(trigger.interval) : undefined;
    if (trigger.type !== 'heartbeat' || interval === undefined) return () => null;
    const beat = intervalAfter(since, interval);
    const window = trigger.window === undefined ? undefined : parseWindow(trigger.window);
    // A window is crossed within a day's beats.
    const beatsPerDay = Math.ceil((24 * 3600_000) / interval) + 1;
    return (after) => {
      let at = beat(after);
      for (let step = 0; window !== undefined && !inWindow(window, this.#minuteOfDay(at, pkg.prepared.timezone)) && step < beatsPerDay; step += 1)
        at = beat(at);
      return at;
    };
  }

  /** A timed trigger's instant: fire unless outside the heartbeat's window; a busy binding's fire is recorded as skipped. */
  #onTimer(fire: TimerFire): void {
    const { pkg, binding: name, trigger, window, at } = fire;
    const { store, queue } = this.#state.options;
    const { logger } = this.#state;
    if (window !== undefined && !inWindow(window, this.#minuteOfDay(at, pkg.prepared.timezone))) return;
    store.packages.setLastFire(pkg.slug, name, at).catch((error: unknown) => logger.error({ err: error }, 'could not record a fire'));
    if (queue !== undefined) {
      // The instant's one job (named like the timer's claim): whichever node takes it runs it.
      this.#runs
        .enqueue({ slug: pkg.slug, binding: name, trigger, inputs: {}, dedupeKey: `package ${pkg.slug}/${name}@${at}` })
        .catch((error: unknown) =>
          logger.error(
            { err: error, package: pkg.slug, binding: name },
            `could not enqueue the run of "${name}" (package "${pkg.slug}") at ${new Date(at).toISOString()}: it does not run`,
          ),
        );
      return;
    }
    this.#runs.fire({ slug: pkg.slug, binding: name, trigger }).catch((error: unknown) => {
      if (error instanceof LoomError && error.code === 'BINDING_BUSY') logger.warn({ package: pkg.slug, binding: name }, error.message);
      else if (!this.#state.stopped.aborted) logger.error({ err: error, package: pkg.slug, binding: name }, `run of "${name}" (package "${pkg.slug}") failed`);
    });
  }

  /** The minute of the day at `at` in `timeZone` (formatters cached per zone). */
  #minuteOfDay(at: number, timeZone: string): number {
    let format = this.#formatters.get(timeZone);
    if (format === undefined) {
      format = new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
      this.#formatters.set(timeZone, format);
    }
    let hour = 0;
    let minute = 0;
    for (const part of format.formatToParts(at)) {
      if (part.type === 'hour') hour = Number(part.value);
      if (part.type === 'minute') minute = Number(part.value);
    }
    return hour * 60 + minute;
  }
}
