import { LoomError, type LoomErrorOptions } from './loom-error.ts';

/** A write that would break a uniqueness rule of the store (an id or a name taken). */
export class StoreConflictError extends LoomError {
  constructor(message: string, options?: LoomErrorOptions) {
    super('STORE_CONFLICT', 'user', message, options);
  }
}
