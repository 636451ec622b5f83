import type { SessionRecord } from '../contracts/index.ts';

/** A session as the doors show it: its id, the conversation it holds (null: the agent's main session), and its messages. */
export interface SessionView {
  id: string;
  conversation: string | null;
  messages: readonly unknown[];
}

/** A session in a list (`GET /api/agents/<agent>/sessions`): what it holds, not its messages. Times are ISO 8601. */
export interface SessionSummary {
  id: string;
  /** The conversation it holds: null for the agent's main session (its owner's), else who holds it and through which door. */
  conversation: string | null;
  messages: number;
  created_at: string;
  updated_at: string;
}

/** The summary of a stored session. */
export function toSessionSummary(session: SessionRecord): SessionSummary {
  return {
    id: session.id,
    conversation: session.conversation ?? null,
    messages: session.messages.length,
    created_at: new Date(session.createdAt).toISOString(),
    updated_at: new Date(session.updatedAt).toISOString(),
  };
}
