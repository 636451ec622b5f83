/** The scheduler: runs agents' `[schedule]` (continuous, periodic, proactive) as a lifecycle hook. */
export { CONTINUOUS_WAKE_MESSAGE, createScheduler, cronAfter, cronInstants, intervalAfter, intervalInstants } from './scheduler.ts';
export { type CatchUpSettings, DEFAULT_CATCH_UP, planCatchUp } from './catch-up.ts';
export type { Scheduler, SchedulerOptions, TimerSpec } from './scheduler.ts';
export type { FileChangeListener, WatchFiles } from './watch-files.ts';
