import type { SessionSummary } from '../chat-types.ts';

/**
 * A session's conversation in words: the main session, a key's own (by its name) and its threads
 * (an A2A context, a `/v1` user, an MCP client session), or a channel's chat.
 */
export function conversationLabel(conversation: string | null): string {
  if (conversation === null) return 'main session';
  if (conversation.startsWith('channel:')) return `channel ${conversation.slice('channel:'.length)}`;
  if (!conversation.startsWith('principal:')) return conversation;
  // `principal:<JSON [name, role, agents]>[/<thread>]`: the key's name, and its thread if any.
  const rest = conversation.slice('principal:'.length);
  const end = rest.indexOf(']]');
  const key = end === -1 ? rest : rest.slice(0, end + 2);
  const thread = end === -1 ? '' : rest.slice(end + 3);
  let name = key;
  try {
    const parsed: unknown = JSON.parse(key);
    if (Array.isArray(parsed) && typeof parsed[0] === 'string') name = parsed[0];
  } catch {
    // not the shape Loom writes: shown as it is
  }
  return `key "${name}"${thread === '' ? '' : ` · ${thread}`}`;
}

/**
 * Chooses the session the chat shows and sends to: the sessions the caller holds
 * (`GET …/sessions`), the caller's own first (the owner's: the agent's main session).
 */
export function SessionPicker(props: {
  sessions: readonly SessionSummary[];
  ownId: string | undefined;
  chosen: string | undefined;
  disabled: boolean;
  onChoose: (id: string | undefined) => void;
}) {
  const { sessions, ownId, chosen, disabled, onChoose } = props;
  const own = sessions.find((session) => session.id === ownId);
  return (
    <label class="session-picker">
      <span>Session</span>
      <select
        aria-label="Session"
        disabled={disabled}
        value={chosen ?? ''}
        onChange={(event) => onChoose(event.currentTarget.value === '' ? undefined : event.currentTarget.value)}
      >
        <option value="">Your session{own?.conversation === null ? ' (main)' : ''}</option>
        {sessions
          .filter((session) => session.id !== ownId)
          .map((session) => (
            <option key={session.id} value={session.id}>
              {conversationLabel(session.conversation)} ({session.messages} messages)
            </option>
          ))}
      </select>
    </label>
  );
}
