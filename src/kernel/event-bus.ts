import type { EventRecord, JsonValue, Logger } from '../contracts/index.ts';
import type { ForgedToolEvent } from '../forged-tools/index.ts';
import type { ApprovalEvent } from './approval-requests.ts';

/** Why an agent was killed: on request, or because its parent was. */
export type KillReason = 'requested' | 'parent-killed';

/** What every package event names: the package's agent (its `name` is the package slug), the binding and the run. */
interface PackageEventBase {
  at: number;
  agentId: string;
  name: string;
  binding: string;
}

/**
 * What the package runtime reports (spec/04), recorded in the audit log like the kernel's own:
 * a trigger fired (a run started), an activity started or ended, the owner was notified of a
 * failure, an event was emitted, a run ended, a fire was skipped (the previous run still going)
 * or fires were missed (the daemon was down); a package was installed.
 */
export type PackageEvent =
  | (PackageEventBase & { type: 'package-fire'; runId: string; trigger: string })
  | (PackageEventBase & { type: 'package-activity-start'; runId: string; activity: string; attempt: number })
  | (PackageEventBase & {
      type: 'package-activity-finish';
      runId: string;
      activity: string;
      status: string;
      inputTokens: number;
      outputTokens: number;
      costUsd: number;
      error: string | null;
    })
  | (PackageEventBase & { type: 'package-notify'; runId: string; activity: string; error: string })
  | (PackageEventBase & { type: 'package-emit'; runId: string; event: string })
  | (PackageEventBase & { type: 'package-run-finish'; runId: string; status: string; error: string | null })
  | (PackageEventBase & { type: 'package-skip'; runId: string; trigger: string; reason: string })
  | (PackageEventBase & { type: 'package-miss'; runId: string; trigger: string; count: number; from: number; to: number })
  // Installed (its record stored, its agent spawned): the other nodes sharing the store start its triggers.
  | { type: 'package-install'; at: number; agentId: string; name: string; version: string };

/**
 * What agent types report (spec/03): a chain of thought's trace at the end of a turn; a
 * workflow's state changes and each task's outcome; a code agent's module failing a message.
 */
export type AgentTypeEvent =
  | { type: 'chain-of-thought-finish'; at: number; agentId: string; name: string; message: string; trace: JsonValue[] }
  | { type: 'workflow-state-change'; at: number; agentId: string; name: string; state: string; note: string | null }
  | {
      type: 'workflow-task-finish';
      at: number;
      agentId: string;
      name: string;
      task: string;
      status: string;
      attempts: number;
      action: string | null;
      reason: string | null;
    }
  | { type: 'code-module-fail'; at: number; agentId: string; name: string; fault: string; message: string };

/**
 * What channels report: a person refused (or ignored in a group) by a channel's policy, and a
 * pairing the owner approved. `name` is the channel's agent, `agentId` its id when it exists.
 */
export type ChannelEvent =
  | { type: 'channel-refuse'; at: number; agentId: string | null; name: string; channel: string; userId: string; userName: string | null; reason: string }
  | { type: 'channel-pair'; at: number; agentId: string | null; name: string; channel: string; userId: string; userName: string | null; code: string }
  /**
   * A message of the channel the platform did not take, retries spent: what it was, the message it
   * answered (`platformId`), where it was going and why. `name` is the channel's agent.
   */
  | {
      type: 'channel-reply-fail';
      at: number;
      agentId: string | null;
      name: string;
      channel: string;
      kind: 'reply' | 'error-reply' | 'refusal' | 'approval-request' | 'approval-answer';
      platformId: string;
      conversationId: string;
      thread: string | null;
      userId: string;
      reason: string;
    };

/**
 * A scheduled wake-up of an agent ended (decision 0046): run (`completed`, `failed`), or not
 * (`skipped`, with the reason; `count` instants when missed ones are recorded together).
 */
export type ScheduleEvent = {
  type: 'schedule-run-finish';
  at: number;
  agentId: string;
  name: string;
  runId: string;
  trigger: string;
  outcome: string;
  caughtUp: boolean;
  count: number;
  reason: string | null;
  /** The error code of a budget that refused the run (`QUOTA_EXCEEDED`, `DAILY_BUDGET_SPENT`, …), when one did. */
  code?: string;
};

/** What every turn event names: the agent, who asked (`owner`, `user:<key>`, `agent:<name>`) and how long it took. */
interface TurnEventBase {
  at: number;
  agentId: string;
  name: string;
  /** `message` (a message to the agent) or `task` (a package activity). */
  kind: 'message' | 'task';
  via: string;
  durationMs: number;
}

/**
 * How a turn ended, recorded in the audit log: it finished (its final model, model calls, tokens
 * and cost), was refused before it ran (access, quota, state), was cancelled by its caller, failed
 * because every model failed (`model-fail`), or failed otherwise.
 */
export type TurnEvent =
  | (TurnEventBase & { type: 'turn-finish'; model: string; iterations: number; inputTokens: number; outputTokens: number; costUsd: number })
  | (TurnEventBase & { type: 'turn-refuse' | 'turn-cancel' | 'model-fail' | 'turn-fail'; code: string; message: string });

/**
 * A tool call the tool runner ran (`tool-finish`, or `tool-fail` when the tool answered with an
 * error) or refused (`tool-deny`, `tool-reject`, `tool-block`, `tool-time-out`), recorded in
 * the audit log. `name` is the calling agent (or MCP principal).
 */
export type ToolCallEvent =
  | { type: 'tool-finish' | 'tool-fail'; at: number; agentId: string; name: string; tool: string; durationMs: number }
  // `agentName` and `outcome` repeat `name` and the type, as refusals were recorded before turns were.
  | {
      type: 'tool-deny' | 'tool-reject' | 'tool-block' | 'tool-time-out';
      at: number;
      agentId: string;
      name: string;
      agentName: string;
      tool: string;
      outcome: string;
      reason: string;
    }
  /**
   * Taint tracking found the call carrying untrusted text into `sink`; `action` says what
   * follows (`refuse`: a `tool-deny` record; `approve`: an approval request). `source` names
   * where the text came from (`tool`, `origin`), `excerpt` what the call carries of it.
   */
  | {
      type: 'tool-taint';
      at: number;
      agentId: string;
      name: string;
      tool: string;
      sink: string;
      action: 'approve' | 'refuse';
      source: { tool: string; origin: string };
      excerpt: string;
    };

/**
 * The events the kernel publishes. Each type is `<noun>-<verb>` with the verb bare and registered
 * in `EVENT_TYPES` (src/wire/event-types.ts, decision 0072); test/wire/event-types.test.ts checks this union against it.
 */
export type KernelEvent =
  | { type: 'agent-spawn'; at: number; agentId: string; name: string; parentId: string | null }
  | {
      type: 'agent-suspend';
      at: number;
      agentId: string;
      name: string;
      /** Set when the kernel suspended it on its own (an idle unattended agent). */ reason?: string;
    }
  | { type: 'agent-resume'; at: number; agentId: string; name: string }
  | { type: 'agent-update'; at: number; agentId: string; name: string }
  | { type: 'agent-kill'; at: number; agentId: string; name: string; reason: KillReason }
  | ApprovalEvent
  | PackageEvent
  | AgentTypeEvent
  | ForgedToolEvent
  | ChannelEvent
  | ScheduleEvent
  | TurnEvent
  | ToolCallEvent;

/** A kernel event as the audit log stores it: its type, time and agent, the rest as data. */
export function auditRecordOf(event: KernelEvent): Omit<EventRecord, 'seq'> {
  const { type, at, agentId, ...data } = event;
  return { type, at, agentId, data };
}

/** A kernel event from its audit record (what another node recorded, read back from the store). */
export function kernelEventOf(record: EventRecord): KernelEvent {
  return { ...(record.data as object), type: record.type, at: record.at, agentId: record.agentId } as KernelEvent;
}

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
