import { LoomError, type LoomErrorOptions } from './loom-error.ts';

/** A turn someone cancelled while it ran; what it had said and done is kept in its session. */
export class TurnCancelledError extends LoomError {
  constructor(message: string, options?: LoomErrorOptions) {
    super('TURN_CANCELLED', 'user', message, options);
  }
}
