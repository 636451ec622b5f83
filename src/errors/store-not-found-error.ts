import { LoomError, type LoomErrorOptions } from './loom-error.ts';

/** A write that refers to a row that does not exist (an agent, a session). */
export class StoreNotFoundError extends LoomError {
  constructor(message: string, options?: LoomErrorOptions) {
    super('STORE_NOT_FOUND', 'user', message, options);
  }
}
