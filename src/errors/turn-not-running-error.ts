import { LoomError, type LoomErrorOptions } from './loom-error.ts';

/** A request about an agent's running turn (follow it, cancel it) when it has none. */
export class TurnNotRunningError extends LoomError {
  constructor(agentName: string, action: string, options?: LoomErrorOptions) {
    super('TURN_NOT_RUNNING', 'user', `agent "${agentName}" has no turn running; nothing to ${action}`, { ...options, details: { agent: agentName } });
  }

  /** A client following a turn from an event of one that has ended (its reply is committed to the session). */
  static ended(agentName: string, eventId: string): TurnNotRunningError {
    const error = new TurnNotRunningError(agentName, 'follow');
    error.message = `the turn of agent "${agentName}" that event "${eventId}" belongs to has ended; its reply is in the session (GET /api/agents/${agentName}/session)`;
    return error;
  }
}
