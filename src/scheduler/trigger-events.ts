import type { KernelEvent } from '../kernel/index.ts';

/** Trigger events fired by files appearing or changing under a glob `pattern`. */
export const FILE_TRIGGER_EVENTS = ['file_created', 'file_changed'] as const;

/** A file trigger event name. */
export type FileTriggerEvent = (typeof FILE_TRIGGER_EVENTS)[number];

/** Trigger events fired by the kernel's lifecycle events, each with the kernel event it follows. */
export const LIFECYCLE_TRIGGER_EVENTS = {
  agent_spawned: 'agent-spawn',
  agent_killed: 'agent-kill',
  agent_suspended: 'agent-suspend',
  agent_resumed: 'agent-resume',
} as const satisfies Record<string, KernelEvent['type']>;

/** A lifecycle trigger event name. */
export type LifecycleTriggerEvent = keyof typeof LIFECYCLE_TRIGGER_EVENTS;

/** Every trigger event the scheduler understands, for error messages. */
export const SUPPORTED_TRIGGER_EVENTS: readonly string[] = [...FILE_TRIGGER_EVENTS, ...Object.keys(LIFECYCLE_TRIGGER_EVENTS)];

/** Whether `event` names a file trigger. */
export function isFileTriggerEvent(event: string): event is FileTriggerEvent {
  return (FILE_TRIGGER_EVENTS as readonly string[]).includes(event);
}

/** Whether `event` names a lifecycle trigger. */
export function isLifecycleTriggerEvent(event: string): event is LifecycleTriggerEvent {
  return Object.hasOwn(LIFECYCLE_TRIGGER_EVENTS, event);
}
