import { LoomError, type LoomErrorOptions } from './loom-error.ts';

/** No live agent has the given name or id. */
export class AgentNotFoundError extends LoomError {
  constructor(reference: string, options?: LoomErrorOptions) {
    super('AGENT_NOT_FOUND', 'user', `no agent named or with id "${reference}"`, {
      ...options,
      details: { reference, ...options?.details },
    });
  }
}
