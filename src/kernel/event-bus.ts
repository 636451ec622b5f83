import type { Logger } from '../contracts/index.ts';
import type { ApprovalEvent } from './approval-service.ts';

/** Why an agent was killed: on request, or because its parent was. */
export type KillReason = 'requested' | 'parent-killed';

/** Lifecycle events the kernel publishes. Names are `<noun>-<verb>`. */
export type KernelEvent =
  | { type: 'agent-spawn'; at: number; agentId: string; name: string; parentId: string | null }
  | { type: 'agent-suspend'; at: number; agentId: string; name: string }
  | { type: 'agent-resume'; at: number; agentId: string; name: string }
  | { type: 'agent-kill'; at: number; agentId: string; name: string; reason: KillReason }
  | ApprovalEvent;

/** A subscriber; it must not throw (if it does, the error is logged and others still run). */
export type KernelEventListener = (event: KernelEvent) => void;

/** In-process publish/subscribe for kernel events. */
export interface EventBus {
  publish(event: KernelEvent): void;
  /** Returns a function that unsubscribes. */
  subscribe(listener: KernelEventListener): () => void;
}

/** An event bus delivering synchronously, in subscription order. */
export function createEventBus(logger: Logger): EventBus {
  const listeners = new Set<KernelEventListener>();
  return {
    publish(event) {
      for (const listener of listeners) {
        try {
          listener(event);
        } catch (error) {
          logger.error({ err: error, eventType: event.type }, 'an event listener threw');
        }
      }
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
