/** A turn's result as `POST /api/agents/{agent}/messages` and `loom send --json` return it. */
export interface TurnView {
  text: string;
  usage: { input_tokens: number; output_tokens: number };
  iterations: number;
  cost_usd: number;
  model: string;
}

/** A session as the doors show it: its id, the conversation it holds (null: the agent's main session), and its messages. */
export interface SessionView {
  id: string;
  conversation: string | null;
  messages: readonly unknown[];
}

/**
 * A session in `GET /api/agents/{agent}/sessions` (the owner gets every one, any other key its
 * own): its conversation (null: the agent's main session; `principal:<key>[/<thread>]` a key's;
 * `channel:<channel>:<chat>` a chat's) and how many messages it holds. Times are ISO 8601.
 */
export interface SessionSummary {
  id: string;
  conversation: string | null;
  messages: number;
  created_at: string;
  updated_at: string;
}

/** How a turn ended: it answered, someone (or something) cancelled it, or it failed. */
export type TurnStatus = 'finished' | 'cancelled' | 'failed';

/** The turn an agent runs on a session now (`GET /api/agents/{agent}/turn`, the session view). Times are ISO 8601. */
export interface RunningTurnView {
  /** The run's id once it started; null while it waits behind another turn of the agent. */
  run_id: string | null;
  message: string;
  received_at: string;
  state: 'running' | 'queued';
}

/** A session view with the turn not yet committed to it. */
export type ChatSessionView = SessionView & { running: RunningTurnView | null };

/** How a cancel ended (`POST …/turn/cancel`): `cancelled`, or `finished`/`failed` when the turn ended first. */
export interface CancelledTurnView {
  agent: string;
  run_id: string | null;
  status: TurnStatus;
}

/** One step of a turn's trace, in the order it happened: a model call or a tool call. */
export type TraceStep =
  | {
      kind: 'model';
      model: string;
      /** Every input token, those read from or written to the prompt cache included. */
      inputTokens: number;
      outputTokens: number;
      /** Of `inputTokens`, those read from the prompt cache; absent when none were. */
      cacheReadTokens?: number;
      /** Of `inputTokens`, those written to the prompt cache; absent when none were. */
      cacheWriteTokens?: number;
      /** True for a call cut off while it answered, whose tokens are estimated. */
      estimated?: boolean;
      costUsd: number;
      startedAt: number;
      latencyMs: number;
    }
  | {
      kind: 'tool';
      toolCallId: string;
      toolName: string;
      startedAt: number;
      /** From the call to its result, a wait for a person's approval included. */
      durationMs: number;
      isError: boolean;
      /** How a person decided the call, when it waited for one. */
      approval?: 'approved' | 'denied';
    };

/** What a session keeps of a turn, on its user message under `providerOptions.loom.turn` (times in ms since the epoch); a type, not an interface, so it is a JSON value. */
export type TurnRecord = {
  id: string;
  status: TurnStatus;
  /** Why it was cancelled or failed; null when it finished. */
  reason: string | null;
  startedAt: number;
  finishedAt: number;
  /** `provider/model` that answered last; null when no model answered. */
  model: string | null;
  inputTokens: number;
  outputTokens: number;
  /** Of `inputTokens`, those read from the prompt cache (absent when none). */
  cacheReadTokens?: number;
  /** Of `inputTokens`, those written to the prompt cache (absent when none). */
  cacheWriteTokens?: number;
  costUsd: number;
  steps: TraceStep[];
};

/**
 * An agent event as `POST …/messages` and `GET …/turn` stream it: a finished run carries the turn
 * view, a tool result how long the tool ran where known.
 */
export type AgentEvent =
  | { type: 'run-start'; runId: string; agentId: string; agentName: string }
  | { type: 'text-delta'; text: string }
  | { type: 'tool-call'; toolCallId: string; toolName: string; input: unknown }
  | { type: 'tool-result'; toolCallId: string; toolName: string; text: string; isError: boolean; durationMs?: number }
  | { type: 'approval-request'; approvalId: string; toolCallId: string; toolName: string; input: unknown; expiresAt: string; reason?: string }
  | { type: 'phase'; phase: string; detail: string }
  | { type: 'run-finish'; result: TurnView }
  | { type: 'error'; code: string; category: string; message: string }
  // `GET …/turn` after a restart, to a client that had seen events the daemon had not saved: what follows is the turn from its start.
  | { type: 'rewind'; reason: string };
