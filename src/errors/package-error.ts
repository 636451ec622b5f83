import { LoomError, type LoomErrorOptions } from './loom-error.ts';

/**
 * A package, skill, install code or registry entry that cannot be read, validated or installed
 * (spec/04). The message names the file (or code), the JSON path and what is wrong; nothing is
 * installed when it is thrown.
 */
export class PackageError extends LoomError {
  constructor(message: string, options?: LoomErrorOptions) {
    super('PACKAGE_INVALID', 'user', message, options);
  }
}
