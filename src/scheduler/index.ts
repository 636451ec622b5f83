/** The scheduler: runs agents' `[schedule]` (continuous, periodic, proactive) as a lifecycle hook. */
export { globDirectory } from './glob-directory.ts';
export { CONTINUOUS_WAKE_MESSAGE, createScheduler, DEFAULT_SCHEDULER_TIMEZONE } from './scheduler.ts';
export type { Scheduler, SchedulerOptions } from './scheduler.ts';
export { FILE_TRIGGER_EVENTS, LIFECYCLE_TRIGGER_EVENTS, SUPPORTED_TRIGGER_EVENTS } from './trigger-events.ts';
export type { FileTriggerEvent, LifecycleTriggerEvent } from './trigger-events.ts';
export { watchFilesWithNode } from './watch-files.ts';
export type { FileChangeListener, WatchFiles } from './watch-files.ts';
