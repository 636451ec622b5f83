import { LoomError, type LoomErrorOptions } from './loom-error.ts';

/** An action the acting agent holds no capability for. */
export class CapabilityDeniedError extends LoomError {
  constructor(message: string, options?: LoomErrorOptions) {
    super('CAPABILITY_DENIED', 'user', message, options);
  }
}
