/** A session as `GET /api/agents/{agent}/session` answers it, as far as the crash tests read it. */
export type Session = { messages: { role: string; content: unknown }[]; running: unknown };

/** How many times the session holds `needle` in a message of `role`: a step kept once, not twice. */
export function copies(session: Session, role: string, needle: string): number {
  return session.messages.filter((message) => message.role === role && JSON.stringify(message.content).includes(needle)).length;
}
