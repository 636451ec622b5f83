import type { SessionRecord } from '../contracts/index.ts';
import type { SessionSummary, SessionView } from '../wire/index.ts';

export type { SessionSummary, SessionView };

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
