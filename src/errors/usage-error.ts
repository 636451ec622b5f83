import { LoomError, type LoomErrorOptions } from './loom-error.ts';

/** A command or request used wrongly: a missing argument, an unknown flag, a bad value. */
export class UsageError extends LoomError {
  constructor(message: string, options?: LoomErrorOptions) {
    super('USAGE', 'user', message, options);
  }
}
