import { LoomError, type LoomErrorOptions } from './loom-error.ts';

/** A caller whose role does not allow the request (RBAC), e.g. a viewer sending a message. */
export class AccessDeniedError extends LoomError {
  constructor(message: string, options?: LoomErrorOptions) {
    super('ACCESS_DENIED', 'user', message, options);
  }
}
