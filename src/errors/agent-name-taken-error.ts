import { LoomError, type LoomErrorOptions } from './loom-error.ts';

/** A spawn whose name a live agent already has. */
export class AgentNameTakenError extends LoomError {
  /** `existingId` is the agent holding the name, when known. */
  constructor(name: string, existingId?: string, options?: LoomErrorOptions) {
    const holder = existingId === undefined ? '' : ` (id ${existingId})`;
    super('AGENT_NAME_TAKEN', 'user', `cannot spawn agent "${name}": an agent with that name already exists${holder}; kill it first or choose another name`, {
      ...options,
      details: { name, existingId: existingId ?? null, ...options?.details },
    });
  }
}
