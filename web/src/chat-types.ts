import type { SessionView } from './types.ts';

/** The turn an agent runs on its main session now, as `GET /api/agents/{agent}/turn` and the session view show it. */
export interface RunningTurnView {
  run_id: string | null;
  message: string;
  received_at: string;
  state: 'running' | 'queued';
}

/** The session view: its messages, and the turn not yet committed to it. */
export type ChatSessionView = SessionView & { running: RunningTurnView | null };

/**
 * What the session picker reads of a session in `GET /api/agents/<agent>/sessions` (the owner gets
 * every one, any other key its own): its id, its conversation (null: the agent's main session;
 * `principal:<key>[/<thread>]` a key's; `channel:<channel>:<chat>` a chat's) and how many messages it holds.
 */
export type SessionSummary = { id: string; conversation: string | null; messages: number };

/** How a cancel ended (`POST …/turn/cancel`). */
export interface CancelledTurnView {
  agent: string;
  run_id: string | null;
  status: TurnStatus;
}

export type TurnStatus = 'finished' | 'cancelled' | 'failed';

/** One step of a turn's trace (see the kernel's `TraceStep`). */
export type TraceStep =
  | { kind: 'model'; model: string; inputTokens: number; outputTokens: number; cacheReadTokens?: number; cacheWriteTokens?: number; costUsd: number; startedAt: number; latencyMs: number }
  | { kind: 'tool'; toolCallId: string; toolName: string; startedAt: number; durationMs: number; isError: boolean; approval?: 'approved' | 'denied' };

/** What the session keeps of a turn, on its user message under `providerOptions.loom.turn`. */
export interface TurnRecord {
  id: string;
  status: TurnStatus;
  reason: string | null;
  startedAt: number;
  finishedAt: number;
  model: string | null;
  inputTokens: number;
  outputTokens: number;
  /** Of `inputTokens`, those read from the prompt cache (absent when none). */
  cacheReadTokens?: number;
  /** Of `inputTokens`, those written to the prompt cache (absent when none). */
  cacheWriteTokens?: number;
  costUsd: number;
  steps: TraceStep[];
}
