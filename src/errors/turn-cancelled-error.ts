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

/**
 * The error a client told of a cancelled turn after its end gets (a retry with the turn's idempotency key, a
 * follower on another node of a cluster): `reason`, the message the turn ended with where it ran (a cancel's
 * names who cancelled it), as the turn's own caller got it.
 */
export function turnCancelledAs(reason: string | undefined): TurnCancelledError {
  return new TurnCancelledError(reason ?? 'the turn was cancelled');
}
