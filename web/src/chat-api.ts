import { ApiError, api, apiKey } from './api.ts';
import type { CancelledTurnView, ChatEvent } from './chat-types.ts';
import { parseSse } from './sse.ts';

function headers(extra: Record<string, string>): Record<string, string> {
  const key = apiKey();
  return key === '' ? extra : { ...extra, 'x-api-key': key };
}

async function errorOf(response: Response): Promise<ApiError> {
  const text = await response.text();
  try {
    const body = JSON.parse(text) as { error?: { code?: string; message?: string } };
    if (body.error?.message !== undefined) return new ApiError(response.status, body.error.code ?? 'ERROR', body.error.message);
  } catch {
    // Not JSON: the status line says it.
  }
  return new ApiError(response.status, `HTTP_${response.status}`, text.trim() || response.statusText);
}

/** Reads an SSE response of agent events, calling `onEvent` for each. */
async function readEvents(response: Response, onEvent: (event: ChatEvent) => void): Promise<void> {
  if (!response.ok) throw await errorOf(response);
  if (response.body === null) throw new ApiError(response.status, 'NO_BODY', 'the reply had no body');
  for await (const sse of parseSse(response.body)) {
    if (sse.event === undefined || sse.data === '') continue;
    onEvent(JSON.parse(sse.data) as ChatEvent);
  }
}

/**
 * Sends a message and calls `onEvent` for each event of its turn as it streams. Aborting `signal`
 * stops listening, not the turn: it runs on, and `followTurn` finds it again.
 * @throws {ApiError} when the turn is refused.
 */
export async function sendMessage(agent: string, message: string, onEvent: (event: ChatEvent) => void, signal: AbortSignal): Promise<void> {
  const response = await fetch(`/api/agents/${encodeURIComponent(agent)}/messages`, {
    method: 'POST',
    headers: headers({ 'content-type': 'application/json', accept: 'text/event-stream' }),
    body: JSON.stringify({ message }),
    signal,
  });
  await readEvents(response, onEvent);
}

/**
 * Follows the agent's running turn: its events so far, then the rest until it ends.
 * @throws {ApiError} 409 `TURN_NOT_RUNNING` when it has ended meanwhile.
 */
export async function followTurn(agent: string, onEvent: (event: ChatEvent) => void, signal: AbortSignal): Promise<void> {
  const response = await fetch(`/api/agents/${encodeURIComponent(agent)}/turn`, { headers: headers({ accept: 'text/event-stream' }), signal });
  await readEvents(response, onEvent);
}

/** Cancels the agent's running turn; resolves once it is committed. @throws {ApiError} */
export function cancelTurn(agent: string): Promise<CancelledTurnView> {
  return api<CancelledTurnView>(`/api/agents/${encodeURIComponent(agent)}/turn/cancel`, { method: 'POST' });
}

/** Empties the agent's session (owner keys only). @throws {ApiError} */
export function resetSession(agent: string): Promise<void> {
  return api<undefined>(`/api/agents/${encodeURIComponent(agent)}/session`, { method: 'DELETE' });
}
