import type { ModelMessage } from 'ai';
import { SUMMARY_PREFIX } from '../runtime/index.ts';

/**
 * spec/01's canonical context (step 6b, saved at 6j): what an agent has said with one person
 * across every conversation (channels, threads), so what it learned of them on one is there on
 * another. Kept as a session of its own per agent and person: each exchange appended with the
 * conversation it happened in, the older ones summarised once there are more than
 * `CANONICAL_MAX_MESSAGES`, as a session is compacted.
 */

/** Past this many messages, the older ones are summarised. */
export const CANONICAL_MAX_MESSAGES = 40;
/** How many of the newest messages a summary keeps as they are. */
export const CANONICAL_KEEP_MESSAGES = 20;
/** How much of one message the system prompt shows. */
const SHOWN_MESSAGE_CHARS = 600;

/** The key of a person's canonical session with an agent (see `conversationSessionId`). */
export function canonicalConversation(person: string): string {
  return `person:${person}`;
}

/** An exchange as the canonical session keeps it: each side labelled with its conversation. */
export function canonicalExchange(conversation: string, message: string, reply: string): ModelMessage[] {
  return [
    { role: 'user', content: `(${conversation}) ${message}` },
    { role: 'assistant', content: `(${conversation}) ${reply}` },
  ];
}

function textOf(message: ModelMessage): string {
  if (typeof message.content === 'string') return message.content;
  return message.content
    .map((part) => ('text' in part && typeof part.text === 'string' ? part.text : ''))
    .join(' ')
    .trim();
}

/**
 * The canonical context as a section of the system prompt: the summary and the exchanges that
 * happened in other conversations than `conversation` (this one's are in its own session).
 * Undefined when there are none.
 */
export function renderCanonical(messages: readonly ModelMessage[], person: string, conversation: string): string | undefined {
  const own = `(${conversation}) `;
  const lines: string[] = [];
  for (const message of messages) {
    const text = textOf(message);
    if (text.startsWith(own)) continue;
    if (text.startsWith(SUMMARY_PREFIX)) {
      lines.push(`Summary of earlier conversations: ${text.slice(SUMMARY_PREFIX.length).trim()}`);
      continue;
    }
    const shown = text.length > SHOWN_MESSAGE_CHARS ? `${text.slice(0, SHOWN_MESSAGE_CHARS)}…` : text;
    lines.push(`${message.role === 'user' ? 'They said' : 'You said'} ${shown}`);
  }
  if (lines.length === 0) return undefined;
  return `What you know of this person (${person}) from your other conversations with them, oldest first:\n${lines.map((line) => `- ${line}`).join('\n')}`;
}
