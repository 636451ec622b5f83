import { LoomError, type LoomErrorOptions } from './loom-error.ts';

/** A child agent asking for a capability its parent does not cover. */
export class CapabilityEscalationError extends LoomError {
  constructor(message: string, options?: LoomErrorOptions) {
    super('CAPABILITY_ESCALATION', 'user', message, options);
  }
}
