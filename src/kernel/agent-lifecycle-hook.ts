import type { AgentEntry } from './agent-entry.ts';

/** Why an agent stops running: suspended, killed, or the kernel shutting down. */
export type StopReason = 'suspend' | 'kill' | 'shutdown';

/**
 * A subsystem that follows agents' lives: the scheduler starts background loops, the trigger
 * engine registers triggers. `start` runs when an agent begins running (spawn, resume, boot),
 * `stop` when it stops. A hook that throws is logged; it does not undo the lifecycle change.
 */
export interface AgentLifecycleHook {
  readonly name: string;
  /**
   * Whether it starts what the agent does unasked (schedules, triggers, package workflows): such a
   * hook starts only while every agent above it runs, and stops when one of them is suspended.
   */
  readonly unasked?: boolean;
  start(agent: AgentEntry): void | Promise<void>;
  stop(agent: AgentEntry, reason: StopReason): void | Promise<void>;
}
