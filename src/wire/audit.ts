import type { EventType } from './event-types.ts';

/** The kernel events the package runtime and installer publish on `/api/events` (their `name` is the package slug). */
export const PACKAGE_EVENT_TYPES = [
  'package-fire',
  'package-activity-start',
  'package-activity-finish',
  'package-notify',
  'package-emit',
  'package-run-finish',
  'package-skip',
  'package-miss',
  'package-install',
] as const satisfies readonly EventType[];

/** The type of a package event. */
export type PackageEventType = (typeof PACKAGE_EVENT_TYPES)[number];

/**
 * The kinds of audit records, by the event types each covers: what `/api/audit?kind=` and the
 * dashboard's Events page filter on. A refusal is both a refusal and a turn, tool or channel record.
 */
export const AUDIT_KINDS = {
  turn: ['turn-finish', 'turn-refuse', 'turn-cancel', 'turn-fail', 'model-fail'],
  tool: ['tool-finish', 'tool-fail', 'tool-deny', 'tool-reject', 'tool-block', 'tool-time-out', 'tool-sandbox-fail'],
  refusal: ['turn-refuse', 'tool-deny', 'tool-reject', 'tool-block', 'channel-refuse'],
  approval: ['approval-request', 'approval-decide'],
  taint: ['tool-taint'],
  'model-error': ['model-fail'],
  agent: ['agent-spawn', 'agent-suspend', 'agent-resume', 'agent-update', 'agent-kill'],
  forge: ['tool-forge', 'tool-promote', 'tool-demote', 'tool-retire', 'tool-sandbox-fail'],
  package: PACKAGE_EVENT_TYPES,
  channel: ['channel-refuse', 'channel-pair', 'channel-reply-fail'],
  schedule: ['schedule-run-finish'],
  reasoning: ['chain-of-thought-finish', 'workflow-state-change', 'workflow-task-finish', 'code-module-fail'],
} as const satisfies Record<string, readonly EventType[]>;

/** A kind of audit record. */
export type AuditKind = keyof typeof AUDIT_KINDS;

/**
 * How a turn or a call ended, by the event types that record it: what `/api/audit?outcome=`
 * filters on. Records that end nothing (a spawn, an approval request) have no outcome; an
 * approval's decision is in its `status`.
 */
export const AUDIT_OUTCOMES = {
  ok: ['turn-finish', 'tool-finish'],
  refused: AUDIT_KINDS.refusal,
  failed: ['turn-fail', 'model-fail', 'tool-fail', 'tool-time-out', 'tool-sandbox-fail', 'code-module-fail', 'package-notify', 'channel-reply-fail'],
  cancelled: ['turn-cancel'],
} as const satisfies Record<string, readonly EventType[]>;

/** An outcome of a turn or a call. */
export type AuditOutcome = keyof typeof AUDIT_OUTCOMES;

/** A kernel event from `/api/events`. */
export interface KernelEvent {
  type: string;
  at: number;
  agentId: string;
  name: string;
  [field: string]: unknown;
}

/** Whether a kernel event comes from the package runtime (its `name` is then the package slug). */
export function isPackageEvent(event: Pick<KernelEvent, 'type'>): boolean {
  return (PACKAGE_EVENT_TYPES as readonly string[]).includes(event.type);
}

/** A row of `/api/audit`: a kernel event, a turn, a tool call or a refusal, as the audit log holds it. */
export interface AuditRecord {
  seq: number;
  at: number;
  type: string;
  agentId: string | null;
  data: Record<string, unknown>;
}

/** A `package-notify` row of `/api/audit`: an activity failed and its fallback is `NotifyOwner`. */
export interface PackageNotifyRecord {
  seq: number;
  at: number;
  type: 'package-notify';
  agentId: string | null;
  data: { name?: string; binding?: string; runId?: string; activity?: string; error?: string };
}
