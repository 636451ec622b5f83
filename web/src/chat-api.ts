import { api, streamEvents } from './api.ts';
import type { CancelledTurnView } from './chat-types.ts';
import type { AgentEvent } from './types.ts';

/**
 * Sends a message, into the session `session` names (one the caller holds) or the caller's own,
 * and calls `onEvent` for each event of its turn as it streams. Aborting `signal` stops
 * listening, not the turn: it runs on, and `followTurn` finds it again.
 * @throws {ApiError} when the turn is refused.
 */
export function sendMessage(
  agent: string,
  message: string,
  onEvent: (event: AgentEvent, id: string | undefined) => void,
  signal: AbortSignal,
  session?: string,
): Promise<void> {
  return streamEvents(
    `/api/agents/${encodeURIComponent(agent)}/messages`,
    { method: 'POST', body: JSON.stringify({ message, session }), contentType: 'application/json' },
    onEvent,
    signal,
  );
}

/** `GET|DELETE …/session` of the session `session` names, or of the caller's own when undefined. */
export function sessionPath(agent: string, session: string | undefined): string {
  return `/api/agents/${encodeURIComponent(agent)}/session${session === undefined ? '' : `?session=${encodeURIComponent(session)}`}`;
}

/** Where a turn is followed from: the session `session` names (the caller's own when undefined), after the event `lastEventId`; `onOpen` once the stream is open. */
export interface FollowOptions {
  session?: string | undefined;
  lastEventId?: string | undefined;
  onOpen?: () => void;
}

/**
 * Follows the agent's running turn on the session: its events so far (after `lastEventId` when
 * given), then the rest until it ends.
 * @throws {ApiError} 409 `TURN_NOT_RUNNING` when it has ended meanwhile.
 */
export function followTurn(
  agent: string,
  onEvent: (event: AgentEvent, id: string | undefined) => void,
  signal: AbortSignal,
  options: FollowOptions = {},
): Promise<void> {
  const path = `/api/agents/${encodeURIComponent(agent)}/turn${options.session === undefined ? '' : `?session=${encodeURIComponent(options.session)}`}`;
  return streamEvents(
    path,
    {
      ...(options.lastEventId === undefined ? {} : { headers: { 'last-event-id': options.lastEventId } }),
      ...(options.onOpen === undefined ? {} : { onOpen: options.onOpen }),
    },
    onEvent,
    signal,
  );
}

/** Cancels the agent's running turn on the session `session` names (the caller's own when undefined); resolves once it is committed. @throws {ApiError} */
export function cancelTurn(agent: string, session?: string): Promise<CancelledTurnView> {
  return api<CancelledTurnView>(
    `/api/agents/${encodeURIComponent(agent)}/turn/cancel${session === undefined ? '' : `?session=${encodeURIComponent(session)}`}`,
    { method: 'POST' },
  );
}

/** Empties the agent's session, or the one `session` names (owner keys only). @throws {ApiError} */
export function resetSession(agent: string, session?: string): Promise<void> {
  return api<undefined>(sessionPath(agent, session), { method: 'DELETE' });
}
