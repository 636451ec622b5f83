import { api, streamEvents } from './api.ts';
import type { CancelledTurnView } from './chat-types.ts';
import type { AgentEvent } from './types.ts';

/**
 * Sends a message, into the session `session` names (one the caller holds) or the caller's own,
 * and calls `onEvent` for each event of its turn as it streams. Aborting `signal` stops
 * listening, not the turn: it runs on, and `followTurn` finds it again.
 * @throws {ApiError} when the turn is refused.
 */
export function sendMessage(agent: string, message: string, onEvent: (event: AgentEvent) => void, signal: AbortSignal, session?: string): Promise<void> {
  return streamEvents(`/api/agents/${encodeURIComponent(agent)}/messages`, { method: 'POST', body: JSON.stringify({ message, session }), contentType: 'application/json' }, onEvent, signal);
}

/** `GET|DELETE …/session` of the session `session` names, or of the caller's own when undefined. */
export function sessionPath(agent: string, session: string | undefined): string {
  return `/api/agents/${encodeURIComponent(agent)}/session${session === undefined ? '' : `?session=${encodeURIComponent(session)}`}`;
}

/**
 * Follows the agent's running turn: its events so far, then the rest until it ends.
 * @throws {ApiError} 409 `TURN_NOT_RUNNING` when it has ended meanwhile.
 */
export function followTurn(agent: string, onEvent: (event: AgentEvent) => void, signal: AbortSignal): Promise<void> {
  return streamEvents(`/api/agents/${encodeURIComponent(agent)}/turn`, {}, onEvent, signal);
}

/** Cancels the agent's running turn; resolves once it is committed. @throws {ApiError} */
export function cancelTurn(agent: string): Promise<CancelledTurnView> {
  return api<CancelledTurnView>(`/api/agents/${encodeURIComponent(agent)}/turn/cancel`, { method: 'POST' });
}

/** Empties the agent's session, or the one `session` names (owner keys only). @throws {ApiError} */
export function resetSession(agent: string, session?: string): Promise<void> {
  return api<undefined>(sessionPath(agent, session), { method: 'DELETE' });
}
