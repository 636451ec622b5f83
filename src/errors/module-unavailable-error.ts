import { LoomError, type LoomErrorOptions } from './loom-error.ts';

/** An agent whose `module` this Loom cannot run, or a turn with no model runtime configured. */
export class ModuleUnavailableError extends LoomError {
  constructor(message: string, options?: LoomErrorOptions) {
    super('MODULE_UNAVAILABLE', 'user', message, options);
  }
}
