import type { CATCH_UP_POLICIES } from '../manifest/index.ts';

/** What becomes of wake-ups due while the daemon was down (decision 0046). */
export type CatchUpPolicy = (typeof CATCH_UP_POLICIES)[number];

/** The daemon's catch-up settings (`[scheduler]` in config.toml), which an agent's `[schedule]` may override. */
export interface CatchUpSettings {
  policy: CatchUpPolicy;
  windowSeconds: number;
}

/** `[scheduler].catch_up` and `catch_up_window_seconds` when config.toml says nothing. */
export const DEFAULT_CATCH_UP: CatchUpSettings = { policy: 'once', windowSeconds: 3600 };

/** `catch_up = "all"` runs at most this many missed wake-ups (the latest); older ones are recorded as skipped. */
export const MAX_CATCH_UP_RUNS = 100;

/** Missed instants are counted up to this many (a long outage with a short interval); a record then says "or more". */
export const MAX_COUNTED_INSTANTS = 10_000;

/** Instants of several missed wake-ups recorded as one skipped run. */
export interface SkippedInstants {
  /** The first of them. */
  dueAt: number;
  count: number;
  reason: string;
}

/** What to do about the wake-ups a schedule missed: which to run late, and which to record as skipped. */
export interface CatchUpPlan {
  /** Instants to run late, oldest first. */
  run: number[];
  skipped: SkippedInstants[];
}

/** Up to `limit` instants `after` gives from `from` (exclusive) while `keep` holds. */
function instantsFrom(after: (at: number) => number | null, from: number, keep: (at: number) => boolean, limit: number): number[] {
  const instants: number[] = [];
  for (let at = after(from); at !== null && keep(at) && instants.length < limit; at = after(at)) instants.push(at);
  return instants;
}

/** "3 wake-ups" (or "10000 or more wake-ups" when counting stopped at the cap). */
function wakeUps(count: number): string {
  return `${count >= MAX_COUNTED_INSTANTS ? `${MAX_COUNTED_INSTANTS} or more` : count} wake-up${count === 1 ? '' : 's'}`;
}

/**
 * Plans the catch-up of the instants a schedule passed after `since` and up to `now` (the daemon
 * was down): those older than the window are skipped; of the others `once` runs the latest and
 * skips the rest, `all` runs each (the latest {@link MAX_CATCH_UP_RUNS}), `skip` runs none.
 * `after(at)` is the schedule's first instant strictly after `at`, null when there is none;
 * `missedWhile` says why they were missed, as the reasons give it.
 */
export function planCatchUp(
  after: (at: number) => number | null,
  since: number,
  now: number,
  settings: CatchUpSettings,
  missedWhile = 'the daemon was down',
): CatchUpPlan {
  const windowStart = now - settings.windowSeconds * 1000;
  const plan: CatchUpPlan = { run: [], skipped: [] };
  const stale = instantsFrom(after, since, (at) => at < windowStart && at <= now, MAX_COUNTED_INSTANTS);
  const [firstStale] = stale;
  if (firstStale !== undefined) {
    plan.skipped.push({
      dueAt: firstStale,
      count: stale.length,
      reason: `${wakeUps(stale.length)} missed while ${missedWhile}, more than ${settings.windowSeconds} s ago (catch_up_window_seconds): not run`,
    });
  }
  const fresh = instantsFrom(after, Math.max(since, windowStart - 1), (at) => at <= now, MAX_COUNTED_INSTANTS);
  const keep = settings.policy === 'skip' ? 0 : settings.policy === 'once' ? 1 : MAX_CATCH_UP_RUNS;
  const dropped = fresh.slice(0, Math.max(0, fresh.length - keep));
  plan.run = fresh.slice(dropped.length);
  const [firstDropped] = dropped;
  if (firstDropped !== undefined) {
    const why =
      settings.policy === 'skip'
        ? 'catch_up = "skip"'
        : settings.policy === 'once'
          ? 'catch_up = "once": only the latest is run'
          : `catch_up = "all" runs the latest ${MAX_CATCH_UP_RUNS}`;
    plan.skipped.push({ dueAt: firstDropped, count: dropped.length, reason: `${wakeUps(dropped.length)} missed while ${missedWhile} (${why}): not run` });
  }
  return plan;
}
