import { LoomError, type LoomErrorOptions } from './loom-error.ts';

/** A request refused because the agent used up an hourly quota. `details.retryAt` says when it frees up. */
export class QuotaExceededError extends LoomError {
  constructor(message: string, options?: LoomErrorOptions) {
    super('QUOTA_EXCEEDED', 'user', message, options);
  }
}
