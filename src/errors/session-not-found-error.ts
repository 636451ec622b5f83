import { LoomError, type LoomErrorOptions } from './loom-error.ts';

/** A session of an agent asked for by id that does not exist, or that the caller does not hold (the two are not told apart). */
export class SessionNotFoundError extends LoomError {
  constructor(agentName: string, sessionId: string, options?: LoomErrorOptions) {
    super(
      'SESSION_NOT_FOUND',
      'user',
      `agent "${agentName}" has no session "${sessionId}" that this caller holds; GET /api/agents/${agentName}/sessions lists the ones it does`,
      {
        ...options,
        details: { agent: agentName, session: sessionId },
      },
    );
  }
}
