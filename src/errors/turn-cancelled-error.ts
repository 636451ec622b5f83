import { LoomError, type LoomErrorOptions } from './loom-error.ts';

/** A turn someone cancelled while it ran; what it had said and done is kept in its session. */
export class TurnCancelledError extends LoomError {
  constructor(message: string, options?: LoomErrorOptions) {
    super('TURN_CANCELLED', 'user', message, options);
  }
}

/** The error a turn ends with when `by` (who cancelled it: `the owner`, a key's name quoted) cancels it while it runs. */
export function turnCancelledBy(by: string): TurnCancelledError {
  return new TurnCancelledError(`the turn was cancelled by ${by}; what it said before is kept in the session`);
}
