import { LoomError, type LoomErrorOptions } from './loom-error.ts';

/** A request about an agent's running turn (follow it, cancel it) when it has none. */
export class TurnNotRunningError extends LoomError {
  constructor(agentName: string, action: string, options?: LoomErrorOptions) {
    super('TURN_NOT_RUNNING', 'user', `agent "${agentName}" has no turn running; nothing to ${action}`, { ...options, details: { agent: agentName } });
  }
}
