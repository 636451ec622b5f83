import type { KernelEvent } from '../kernel/index.ts';
import { FILE_TRIGGER_EVENTS, type LIFECYCLE_TRIGGER_EVENTS as LIFECYCLE_TRIGGER_NAMES, TRIGGER_EVENTS } from '../manifest/index.ts';

export { FILE_TRIGGER_EVENTS };

/** A file trigger event name. */
export type FileTriggerEvent = (typeof FILE_TRIGGER_EVENTS)[number];

/** A lifecycle trigger event name. */
export type LifecycleTriggerEvent = (typeof LIFECYCLE_TRIGGER_NAMES)[number];

/** Trigger events fired by the kernel's lifecycle events, each with the kernel event it follows. */
export const LIFECYCLE_TRIGGER_EVENTS = {
  agent_spawned: 'agent-spawn',
  agent_killed: 'agent-kill',
  agent_suspended: 'agent-suspend',
  agent_resumed: 'agent-resume',
} as const satisfies Record<LifecycleTriggerEvent, KernelEvent['type']>;

/** Every trigger event the scheduler understands (the manifest refuses any other), for messages. */
export const SUPPORTED_TRIGGER_EVENTS: readonly string[] = TRIGGER_EVENTS;

/** Whether `event` names a file trigger. */
export function isFileTriggerEvent(event: string): event is FileTriggerEvent {
  return (FILE_TRIGGER_EVENTS as readonly string[]).includes(event);
}

/** Whether `event` names a lifecycle trigger. */
export function isLifecycleTriggerEvent(event: string): event is LifecycleTriggerEvent {
  return Object.hasOwn(LIFECYCLE_TRIGGER_EVENTS, event);
}
