import { LoomError, type LoomErrorOptions } from './loom-error.ts';

/** The store failed: the database cannot be opened, read or written. */
export class StoreError extends LoomError {
  constructor(message: string, options?: LoomErrorOptions) {
    super('STORE_FAILURE', 'system', message, options);
  }
}
