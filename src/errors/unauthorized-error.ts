import { LoomError, type LoomErrorOptions } from './loom-error.ts';

/** A request without a valid API key where one is needed (HTTP 401). */
export class UnauthorizedError extends LoomError {
  constructor(message: string, options?: LoomErrorOptions) {
    super('UNAUTHORIZED', 'user', message, options);
  }
}
