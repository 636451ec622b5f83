import { LoomError, type LoomErrorOptions } from './loom-error.ts';

/** A manifest that cannot be read, parsed or validated. The message names file and field. */
export class ManifestError extends LoomError {
  constructor(message: string, options?: LoomErrorOptions) {
    super('MANIFEST_INVALID', 'user', message, options);
  }
}
