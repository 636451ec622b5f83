/** The scheduler: runs agents' `[schedule]` (continuous, periodic, proactive) as a lifecycle hook. */
export { CONTINUOUS_WAKE_MESSAGE, createScheduler, cronAfter, cronInstants, DEFAULT_SCHEDULER_TIMEZONE, intervalAfter, intervalInstants } from './scheduler.ts';
export { type CatchUpPlan, type CatchUpPolicy, type CatchUpSettings, DEFAULT_CATCH_UP, planCatchUp } from './catch-up.ts';
export type { Scheduler, SchedulerOptions, TimerSpec } from './scheduler.ts';
export { FILE_TRIGGER_EVENTS, LIFECYCLE_TRIGGER_EVENTS, SUPPORTED_TRIGGER_EVENTS } from './trigger-events.ts';
export type { FileTriggerEvent, LifecycleTriggerEvent } from './trigger-events.ts';
export { watchFilesWithNode } from './watch-files.ts';
export type { FileChangeListener, WatchFiles } from './watch-files.ts';
