import { LoomError, type LoomErrorOptions } from './loom-error.ts';

/** A request the agent cannot take in its current state (e.g. a message to a suspended agent). */
export class AgentStateError extends LoomError {
  constructor(message: string, options?: LoomErrorOptions) {
    super('AGENT_STATE', 'user', message, options);
  }
}
