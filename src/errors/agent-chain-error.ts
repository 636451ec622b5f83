import { LoomError, type LoomErrorOptions } from './loom-error.ts';

/** An agent-to-agent message past the depth limit, or back to an agent already in the chain. */
export class AgentChainError extends LoomError {
  constructor(message: string, options?: LoomErrorOptions) {
    super('AGENT_CHAIN', 'user', message, options);
  }
}
