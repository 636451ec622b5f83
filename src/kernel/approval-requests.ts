import type { ApprovalRecord, ApprovalStatus, JsonObject, JsonValue } from '../contracts/index.ts';

/** Approval requests as the kernel's parts and doors speak of them: decisions, events, who closed a request and why. */

/** How long a tool call waits for a human when `[approvals].timeout_seconds` is not set. */
export const DEFAULT_APPROVAL_TIMEOUT_MS = 5 * 60 * 1000;

/** `decided_by` of a request nobody decided within the timeout. */
export const EXPIRED_BY_TIMEOUT = 'timeout';
/** `decided_by` of a request whose turn was cancelled (kill, suspend, shutdown) while it waited. */
export const EXPIRED_BY_CANCEL = 'cancel';
/** `decided_by` of a request asked by a Loom process that is gone (a restart, a crash). */
export const EXPIRED_BY_RESTART = 'restart';
/** `decided_by` of a request still waiting when this Loom process stopped (SIGTERM, `loom stop`). */
export const EXPIRED_BY_SHUTDOWN = 'shutdown';
/** `decided_by` of a question its asker took back before anyone answered (an MCP server cancelled its request, or the call that asked ended). */
export const EXPIRED_BY_WITHDRAW = 'withdrawn';

/** The reason stored on a request closed because the process that asked for it is gone. */
export const RESTART_REASON = 'Loom restarted while this call waited for approval; nothing was run — ask the agent again';

/** The reason stored on a request closed because Loom stopped while it waited. */
export const SHUTDOWN_REASON = 'Loom was stopped while this waited for a person; nothing was run — ask the agent again';

/** A human's answer to an approval request. */
export interface ApprovalDecision {
  approved: boolean;
  /** Who decided: a key's name, `local`, or `timeout` (or `restart`, `cancel`: see the EXPIRED_BY_ names). */
  by: string;
  reason: string | null;
  /** The answer to a question (a request opened with `answerSchema`), when approved. Kept in memory only: it may be personal. */
  answer?: JsonObject | undefined;
}

/** A request opened for a tool call: its id (to show), and the decision to wait for. */
export interface OpenApproval {
  id: string;
  expiresAt: number;
  decision: Promise<ApprovalDecision>;
}

/** Kernel events about approvals, for the event bus. */
export type ApprovalEvent =
  | { type: 'approval-request'; at: number; agentId: string; name: string; approvalId: string; tool: string }
  | { type: 'approval-decide'; at: number; agentId: string; name: string; approvalId: string; tool: string; status: ApprovalStatus; by: string };

/** This process as a node of the cluster (docs/cluster.md), for requests waited for on other nodes sharing the store. */
export interface ApprovalNode {
  /** This node's id, recorded on each request it opens. */
  readonly id: string;
  /** The node `id` when it runs now (its heartbeat is fresh), with how it is shown; undefined when it is gone or unknown. */
  find(id: string): Promise<{ name: string; url: string | null } | undefined>;
}

/** Whether a request is a question (a person asked for input, e.g. an MCP server's elicitation): its input carries the schema of the answer. */
export function isQuestion(input: JsonValue): boolean {
  return typeof input === 'object' && input !== null && !Array.isArray(input) && 'requestedSchema' in input;
}

/** The decision a stored, decided request holds, for the turn waiting for it; `by` when it names nobody. */
export function storedDecision(record: ApprovalRecord, by: string): ApprovalDecision {
  return { approved: record.status === 'approved', by: record.decidedBy ?? by, reason: record.reason };
}
