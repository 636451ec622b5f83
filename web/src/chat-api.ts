import { API, call, EVENT_STREAM, open, readEvents } from './api.ts';
import type { AnswerOf } from '../../src/wire/index.ts';
import type { AgentEvent } from './types.ts';

/**
 * Sends a message, into the session `session` names (one the caller holds) or the caller's own,
 * and calls `onEvent` for each event of its turn as it streams. Aborting `signal` stops
 * listening, not the turn: it runs on, and `followTurn` finds it again.
 * @throws {ApiError} when the turn is refused.
 */
export async function sendMessage(
  agent: string,
  message: string,
  onEvent: (event: AgentEvent, id: string | undefined) => void,
  signal: AbortSignal,
  session?: string,
): Promise<void> {
  await readEvents(await open(API.sendMessage, { params: { agent }, body: { message, session }, headers: EVENT_STREAM, signal }), onEvent);
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
export async function followTurn(
  agent: string,
  onEvent: (event: AgentEvent, id: string | undefined) => void,
  signal: AbortSignal,
  options: FollowOptions = {},
): Promise<void> {
  const headers = options.lastEventId === undefined ? EVENT_STREAM : { ...EVENT_STREAM, 'last-event-id': options.lastEventId };
  const response = await open(API.runningTurn, { params: { agent }, query: { session: options.session }, headers, signal });
  await readEvents(response, onEvent, options.onOpen);
}

/** Cancels the agent's running turn on the session `session` names (the caller's own when undefined); resolves once it is committed. @throws {ApiError} */
export function cancelTurn(agent: string, session?: string): Promise<AnswerOf<typeof API.cancelTurn>> {
  return call(API.cancelTurn, { params: { agent }, query: { session } });
}

/** Empties the agent's session, or the one `session` names (owner keys only). @throws {ApiError} */
export function resetSession(agent: string, session?: string): Promise<void> {
  return call(API.resetSession, { params: { agent }, query: { session } });
}
