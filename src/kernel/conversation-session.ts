import { createHash } from 'node:crypto';

/**
 * Where a conversation with an agent is kept: a session of its own, found again from the agent and
 * the conversation alone (a chat thread on a channel, a person's canonical context).
 */

/** The session of an agent's conversation: a UUID derived from both, so the same conversation always finds it. */
export function conversationSessionId(agentId: string, conversation: string): string {
  const hex = createHash('sha256').update(`${agentId}\0${conversation}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${((Number.parseInt(hex.slice(16, 18), 16) & 0x3f) | 0x80).toString(16)}${hex.slice(18, 20)}-${hex.slice(20, 32)}`;
}
